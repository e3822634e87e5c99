import type { Db } from '../db/create-database.js';

/**
 * `identity`: its tokens below `generation` are refused; `api_session`: that session ended;
 * `identity_facts`: facts shown to its tokens (e.g. its name) changed, no token is refused.
 */
export type RevocationKind = 'identity' | 'api_session' | 'identity_facts';

export interface Revocation {
  id: number;
  kind: RevocationKind;
  subject: string;
  /** For `identity`: tokens whose generation is below this are refused. */
  generation: number | null;
  expiresAt: Date;
}

interface RevocationRow {
  id: string | number;
  kind: RevocationKind;
  subject: string;
  generation: number | null;
  expires_at: Date;
}

const toRevocation = (r: RevocationRow): Revocation => ({
  id: Number(r.id),
  kind: r.kind,
  subject: r.subject,
  generation: r.generation,
  expiresAt: r.expires_at,
});

export const revocationsRepository = {
  /** Records the event and notifies every instance when the transaction commits (NOTIFY is transactional). */
  async insert(db: Db, r: Omit<Revocation, 'id'>): Promise<Revocation> {
    const [row] = await db('revocations')
      .insert({ kind: r.kind, subject: r.subject, generation: r.generation, expires_at: r.expiresAt })
      .returning('*');
    await db.raw(`SELECT pg_notify('svc_revocations', ?)`, [String(row.id)]);
    return toRevocation(row);
  },

  /** Revocations with an id above `afterId` or among `ids`, oldest first, at most `limit`. */
  async listAfterOrIn(db: Db, afterId: number, ids: number[], limit: number): Promise<Revocation[]> {
    const rows = await db<RevocationRow>('revocations')
      .where((q) => {
        q.where('id', '>', afterId);
        if (ids.length > 0) q.orWhereIn('id', ids);
      })
      .orderBy('id')
      .limit(limit);
    return rows.map(toRevocation);
  },

  /** Every revocation still in force: what a starting instance loads. */
  async listLive(db: Db, now: Date): Promise<Revocation[]> {
    const rows = await db<RevocationRow>('revocations').where('expires_at', '>', now).orderBy('id');
    return rows.map(toRevocation);
  },

  async maxId(db: Db): Promise<number> {
    const row = await db('revocations').max('id as max').first();
    return Number(row?.max ?? 0);
  },

  /** Expired rows in bounded batches (the janitor). */
  async deleteExpired(db: Db, now: Date, limit = 1000): Promise<number> {
    const { rows } = await db.raw(
      'DELETE FROM revocations WHERE id IN (SELECT id FROM revocations WHERE expires_at < ? LIMIT ?) RETURNING id',
      [now, limit],
    );
    return rows.length;
  },
};
