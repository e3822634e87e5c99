import type { Db } from '../db/create-database.js';

export interface FailureCounts {
  consecutive: number;
  inWindow: number;
}

const HOUR_MS = 3600_000;

/**
 * Failed primary logins per identity, counted by single atomic statements (anchors.md pitfall 3).
 * An attempt is counted BEFORE its password is checked and given back when it succeeds, so that
 * parallel requests cannot test more passwords than the limits allow (Zitadel GHSA-7h8m-vrxx-vr4m).
 */
export const loginFailuresRepository = {
  /** Counts one attempt as a failure (consecutive and in the hourly window); returns the new counts. */
  async recordFailure(db: Db, identityId: string, now: Date): Promise<FailureCounts> {
    const windowStart = new Date(now.getTime() - HOUR_MS);
    const { rows } = await db.raw(
      `INSERT INTO login_failures AS f (identity_id, consecutive, window_started_at, in_window)
       VALUES (?, 1, ?, 1)
       ON CONFLICT (identity_id) DO UPDATE SET
         consecutive = f.consecutive + 1,
         in_window = CASE WHEN f.window_started_at > ? THEN f.in_window + 1 ELSE 1 END,
         window_started_at = CASE WHEN f.window_started_at > ? THEN f.window_started_at ELSE EXCLUDED.window_started_at END
       RETURNING consecutive, in_window`,
      [identityId, now, windowStart, windowStart],
    );
    return { consecutive: rows[0].consecutive, inWindow: rows[0].in_window };
  },

  /**
   * What an unknown username's attempt writes instead of a counter: a committed upsert like
   * `recordFailure`'s, spread over a few rows so parallel attempts do not queue on one.
   */
  async shadowWrite(db: Db, now: Date): Promise<void> {
    await db('login_shadow')
      .insert({ slot: Math.floor(Math.random() * 16), touched_at: now })
      .onConflict('slot')
      .merge(['touched_at']);
  },

  async get(db: Db, identityId: string, now: Date): Promise<FailureCounts> {
    const row = await db('login_failures').where({ identity_id: identityId }).first();
    if (!row) return { consecutive: 0, inWindow: 0 };
    const fresh = row.window_started_at.getTime() > now.getTime() - HOUR_MS;
    return { consecutive: row.consecutive, inWindow: fresh ? row.in_window : 0 };
  },

  /** A successful login: the attempt counted in advance was no failure, and the run is broken. */
  async releaseSuccess(db: Db, identityId: string): Promise<void> {
    await db('login_failures')
      .where({ identity_id: identityId })
      .update({ consecutive: 0, in_window: db.raw('GREATEST(in_window - 1, 0)') });
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
};
