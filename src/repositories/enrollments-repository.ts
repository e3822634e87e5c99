import type { Db } from '../db/create-database.js';
import { mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';

export type EnrollmentMethod = 'ott' | 'ottca' | 'updb';

export interface Enrollment {
  id: string;
  identityId: string;
  method: EnrollmentMethod;
  /** The token sealed with the master key; it is looked up by `token_hash` (docs/adr/0004). */
  tokenSealed: string;
  username: string | null;
  caId: string | null;
  expiresAt: Date;
  createdAt: Date;
}

export type NewEnrollment = Omit<Enrollment, 'createdAt'> & { tokenHash: string };

interface EnrollmentRow {
  id: string;
  identity_id: string;
  method: EnrollmentMethod;
  token_hash: string;
  token_sealed: string;
  username: string | null;
  ca_id: string | null;
  expires_at: Date;
  created_at: Date;
}

export const toEnrollment = (r: EnrollmentRow): Enrollment => ({
  id: r.id,
  identityId: r.identity_id,
  method: r.method,
  tokenSealed: r.token_sealed,
  username: r.username,
  caId: r.ca_id,
  expiresAt: r.expires_at,
  createdAt: r.created_at,
});

export const enrollmentsRepository = {
  async insert(db: Db, e: NewEnrollment): Promise<Enrollment> {
    const [row] = await db('enrollments')
      .insert({
        id: e.id,
        identity_id: e.identityId,
        method: e.method,
        token_hash: e.tokenHash,
        token_sealed: e.tokenSealed,
        username: e.username,
        ca_id: e.caId,
        expires_at: e.expiresAt,
      })
      .returning('*');
    return toEnrollment(row);
  },

  async findById(db: Db, id: string): Promise<Enrollment | undefined> {
    const row = await db<EnrollmentRow>('enrollments').where({ id }).first();
    return row && toEnrollment(row);
  },

  async findByTokenHash(db: Db, tokenHash: string): Promise<Enrollment | undefined> {
    const row = await db<EnrollmentRow>('enrollments').where({ token_hash: tokenHash }).first();
    return row && toEnrollment(row);
  },

  async listFor(db: Db, identityIds: string[]): Promise<Enrollment[]> {
    if (identityIds.length === 0) return [];
    const rows = await db<EnrollmentRow>('enrollments').whereIn('identity_id', identityIds);
    return rows.map(toEnrollment);
  },

  /**
   * Consumes a token in one statement: exactly one caller gets the row (a used token is gone).
   * With `method`/`validAt`, only a token of that method that has not expired at that time.
   */
  async consume(
    db: Db,
    tokenHash: string,
    only: { method?: EnrollmentMethod; validAt?: Date } = {},
  ): Promise<Enrollment | undefined> {
    const q = db('enrollments').where({ token_hash: tokenHash });
    if (only.method !== undefined) q.andWhere({ method: only.method });
    if (only.validAt !== undefined) q.andWhere('expires_at', '>', only.validAt);
    const [row] = await q.delete().returning('*');
    return row && toEnrollment(row);
  },

  async list(db: Db, q: ListQuery): Promise<ListPage<Enrollment>> {
    const page = await runListQuery<EnrollmentRow>(db('enrollments').select('*'), q, 'id');
    return mapPage(page, (rows) => rows.map(toEnrollment));
  },

  async listForIdentity(db: Db, identityId: string): Promise<Enrollment[]> {
    const rows = await db<EnrollmentRow>('enrollments').where({ identity_id: identityId }).orderBy('method');
    return rows.map(toEnrollment);
  },

  /** Whether a pending UPDB enrollment already reserves `username`. */
  async isUsernameReserved(db: Db, username: string): Promise<boolean> {
    return (await db('enrollments').where({ method: 'updb', username }).first('id')) !== undefined;
  },

  async updateExpiry(db: Db, id: string, expiresAt: Date): Promise<Enrollment | undefined> {
    const [row] = await db('enrollments').where({ id }).update({ expires_at: expiresAt }).returning('*');
    return row && toEnrollment(row);
  },

  /** Rows still holding a plain token (written before migration 006). */
  async listPlainTokens(db: Db): Promise<{ id: string; token: string }[]> {
    return db('enrollments').whereNotNull('token').select('id', 'token');
  },

  /** Replaces one plain token by its sealed form and hash; false if another process did it first. */
  async replacePlainToken(
    db: Db,
    id: string,
    token: string,
    protectedToken: { tokenHash: string; tokenSealed: string },
  ): Promise<boolean> {
    const changed = await db('enrollments').where({ id, token }).update({
      token: null,
      token_hash: protectedToken.tokenHash,
      token_sealed: protectedToken.tokenSealed,
    });
    return changed > 0;
  },

  /** The identities with an enrollment through this CA (ottca). */
  async identitiesWithCa(db: Db, caId: string): Promise<string[]> {
    const rows: { identity_id: string }[] = await db('enrollments')
      .where({ ca_id: caId })
      .distinct('identity_id');
    return rows.map((r) => r.identity_id);
  },

  async delete(db: Db, id: string): Promise<Enrollment | undefined> {
    const [row] = await db('enrollments').where({ id }).delete().returning('*');
    return row && toEnrollment(row);
  },
};
