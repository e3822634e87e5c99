import type { Db } from '../db/create-database.js';

export type RevocationKind = 'identity' | 'api_session' | 'token';

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

  /**
   * Live revocations after `afterId` or created since `since` (commits can land out of id
   * order), oldest first: the catch-up read of every instance.
   */
  async listRecent(db: Db, afterId: number, now: Date, since: Date): Promise<Revocation[]> {
    const rows = await db<RevocationRow>('revocations')
      .where((q) => q.where('id', '>', afterId).orWhere('created_at', '>=', since))
      .andWhere('expires_at', '>', now)
      .orderBy('id')
      .limit(10_000);
    return rows.map(toRevocation);
  },

  /** Live revocations after `afterId`, oldest first. */
  async listAfter(db: Db, afterId: number, now: Date, limit = 1000): Promise<Revocation[]> {
    const rows = await db<RevocationRow>('revocations')
      .where('id', '>', afterId)
      .andWhere('expires_at', '>', now)
      .orderBy('id')
      .limit(limit);
    return rows.map(toRevocation);
  },

  async maxId(db: Db): Promise<number> {
    const row = await db('revocations').max('id as max').first();
    return Number(row?.max ?? 0);
  },

  async deleteExpired(db: Db, now: Date): Promise<number> {
    return db('revocations').where('expires_at', '<', now).delete();
  },
};
