import type { Db } from '../db/create-database.js';

export interface TotpAttemptWindow {
  /** Attempts counted in the current window, this one included. */
  attempts: number;
  windowStartedAt: Date;
}

/**
 * The TOTP failure window per identity, counted by single atomic statements so
 * that parallel requests on any number of instances cannot overshoot the limit.
 */
export const mfaTotpFailuresRepository = {
  /**
   * Counts one attempt before the code is checked (`INSERT … ON CONFLICT … RETURNING`); a window
   * older than `windowMs` starts again at 1. A successful attempt gives its slot back.
   */
  async reserveAttempt(db: Db, identityId: string, now: Date, windowMs: number): Promise<TotpAttemptWindow> {
    const windowStart = new Date(now.getTime() - windowMs);
    const { rows } = await db.raw(
      `INSERT INTO totp_failures AS f (identity_id, window_started_at, failures)
       VALUES (?, ?, 1)
       ON CONFLICT (identity_id) DO UPDATE SET
         failures = CASE WHEN f.window_started_at > ? THEN f.failures + 1 ELSE 1 END,
         window_started_at = CASE WHEN f.window_started_at > ? THEN f.window_started_at ELSE EXCLUDED.window_started_at END
       RETURNING failures, window_started_at`,
      [identityId, now, windowStart, windowStart],
    );
    return { attempts: Number(rows[0].failures), windowStartedAt: new Date(rows[0].window_started_at) };
  },

  async releaseAttempt(db: Db, identityId: string): Promise<void> {
    await db('totp_failures')
      .where({ identity_id: identityId })
      .andWhere('failures', '>', 0)
      .update({ failures: db.raw('failures - 1') });
  },

  /** Windows that started before `before` have ended (the janitor), at most `limit` per call. */
  async deleteEndedWindows(db: Db, before: Date, limit = 1000): Promise<number> {
    const { rows } = await db.raw(
      `DELETE FROM totp_failures WHERE identity_id IN
         (SELECT identity_id FROM totp_failures WHERE window_started_at < ? LIMIT ?)
       RETURNING identity_id`,
      [before, limit],
    );
    return rows.length;
  },
};
