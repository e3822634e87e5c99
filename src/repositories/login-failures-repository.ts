import type { Db } from '../db/create-database.js';

export interface FailureCounts {
  consecutive: number;
  inWindow: number;
}

const HOUR_MS = 3600_000;

/** Failed primary logins per identity, counted by single atomic statements (anchors.md pitfall 3). */
export const loginFailuresRepository = {
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

  async get(db: Db, identityId: string, now: Date): Promise<FailureCounts> {
    const row = await db('login_failures').where({ identity_id: identityId }).first();
    if (!row) return { consecutive: 0, inWindow: 0 };
    const fresh = row.window_started_at.getTime() > now.getTime() - HOUR_MS;
    return { consecutive: row.consecutive, inWindow: fresh ? row.in_window : 0 };
  },

  async resetConsecutive(db: Db, identityId: string): Promise<void> {
    await db('login_failures')
      .where({ identity_id: identityId })
      .andWhere('consecutive', '>', 0)
      .update({ consecutive: 0 });
  },
};
