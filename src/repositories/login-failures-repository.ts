import type { Db } from '../db/create-database.js';
import { fixedStatement, runFixed } from '../db/fixed-statement.js';

export interface FailureCounts {
  /** The identity's run of consecutive failures, from any address. */
  consecutive: number;
  /** Failures of the identity from this client address in the current hour. */
  inWindow: number;
}

const HOUR_MS = 3600_000;

/** Both statements touching both tables lock the run's row first (see the repository's note). */
const RECORD_FAILURE = fixedStatement(
  `WITH run AS (
         INSERT INTO login_failures AS f (identity_id, consecutive) VALUES (?, 1)
         ON CONFLICT (identity_id) DO UPDATE SET consecutive = f.consecutive + 1
         RETURNING consecutive
       ), hour AS (
         INSERT INTO login_address_failures AS a (identity_id, client_address, window_started_at, in_window)
         SELECT ?, ?, ?, 1 FROM run
         ON CONFLICT (identity_id, client_address) DO UPDATE SET
           in_window = CASE WHEN a.window_started_at > ? THEN a.in_window + 1 ELSE 1 END,
           window_started_at = CASE WHEN a.window_started_at > ? THEN a.window_started_at ELSE EXCLUDED.window_started_at END
         RETURNING in_window
       )
       SELECT run.consecutive, hour.in_window FROM run, hour`,
);
const SHADOW_WRITE = fixedStatement(
  `insert into "login_shadow" ("slot", "touched_at") values (?, ?) on conflict ("slot") do update set "touched_at" = excluded."touched_at"`,
);
// Both counters in one statement, as two updates would (a login is a dozen round trips already).
const RELEASE_SUCCESS = fixedStatement(
  `WITH run AS (
         UPDATE login_failures SET consecutive = 0 WHERE identity_id = ? RETURNING 1
       )
       UPDATE login_address_failures SET in_window = GREATEST(in_window - 1, 0)
       WHERE identity_id = ? AND client_address = ? AND (SELECT count(*) FROM run) >= 0`,
);

/**
 * Failed primary logins, counted by single atomic statements: the run of
 * consecutive failures per identity, the hourly window per identity and client address.
 * An attempt is counted BEFORE its password is checked and given back when it succeeds, so that
 * parallel requests cannot test more passwords than the limits allow (Zitadel GHSA-7h8m-vrxx-vr4m).
 *
 * Both statements that touch both tables lock the run's row before the address's: the parts of a
 * WITH otherwise run in an unpredictable order, and parallel logins of one identity from one
 * address could deadlock (PostgreSQL then fails one of them). The address part reads `run`, which
 * makes it wait for it.
 */
export const loginFailuresRepository = {
  /** Counts one attempt as a failure (in the run and in the address's hour); returns the new counts. */
  async recordFailure(db: Db, identityId: string, clientAddress: string, now: Date): Promise<FailureCounts> {
    const windowStart = new Date(now.getTime() - HOUR_MS);
    const [row] = await runFixed<{ consecutive: number; in_window: number }>(db, RECORD_FAILURE, [
      identityId,
      identityId,
      clientAddress,
      now,
      windowStart,
      windowStart,
    ]);
    return { consecutive: row!.consecutive, inWindow: row!.in_window };
  },

  /**
   * What an unknown username's attempt writes instead of a counter: a committed upsert like
   * `recordFailure`'s, spread over a few rows so parallel attempts do not queue on one.
   */
  async shadowWrite(db: Db, now: Date): Promise<void> {
    await runFixed(db, SHADOW_WRITE, [Math.floor(Math.random() * 16), now]);
  },

  /** A successful login: the attempt counted in advance was no failure, and the run is broken. */
  async releaseSuccess(db: Db, identityId: string, clientAddress: string): Promise<void> {
    await runFixed(db, RELEASE_SUCCESS, [identityId, identityId, clientAddress]);
  },

  /** Takes back the consecutive part of an attempt (a locked identity's attempts do not extend its run). */
  async releaseConsecutive(db: Db, identityId: string): Promise<void> {
    await db('login_failures')
      .where({ identity_id: identityId })
      .andWhere('consecutive', '>', 0)
      .update({ consecutive: db.raw('consecutive - 1') });
  },

  /** Ends a run of at least `limit` failures; true for the one caller whose statement ended it. */
  async endRunIfAtLeast(db: Db, identityId: string, limit: number): Promise<boolean> {
    const rows = await db('login_failures')
      .where({ identity_id: identityId })
      .andWhere('consecutive', '>=', limit)
      .update({ consecutive: 0 })
      .returning('identity_id');
    return rows.length > 0;
  },

  /** Hourly windows that have ended, in bounded batches (the janitor). */
  async deleteStaleWindows(db: Db, now: Date, limit = 1000): Promise<number> {
    const { rows } = await db.raw(
      `DELETE FROM login_address_failures WHERE (identity_id, client_address) IN
         (SELECT identity_id, client_address FROM login_address_failures WHERE window_started_at <= ? LIMIT ?)
       RETURNING identity_id`,
      [new Date(now.getTime() - HOUR_MS), limit],
    );
    return rows.length;
  },
};
