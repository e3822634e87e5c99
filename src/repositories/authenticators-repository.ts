import type { Db } from '../db/create-database.js';
import { runFixed } from '../db/fixed-statement.js';
import { fixedSelectFirst } from './fixed-select.js';
import { mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';

export type AuthenticatorMethod = 'updb' | 'cert';

export interface Authenticator {
  id: string;
  identityId: string;
  method: AuthenticatorMethod;
  username: string | null;
  passwordHash: string | null;
  certFingerprint: string | null;
  /** SHA-256 of the tbsCertificate: names the certificate whatever encoding its signature has. */
  certTbsSha256: string | null;
  certPem: string | null;
  caId: string | null;
  isExtendable: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface AuthenticatorRow {
  id: string;
  identity_id: string;
  method: AuthenticatorMethod;
  username: string | null;
  password_hash: string | null;
  cert_fingerprint: string | null;
  cert_tbs_sha256: string | null;
  cert_pem: string | null;
  ca_id: string | null;
  is_extendable: boolean;
  created_at: Date;
  updated_at: Date;
}

/** Every column, named (see IDENTITY_COLUMNS). */
export const AUTHENTICATOR_COLUMNS = [
  'id',
  'identity_id',
  'method',
  'username',
  'password_hash',
  'cert_fingerprint',
  'cert_tbs_sha256',
  'cert_pem',
  'ca_id',
  'is_extendable',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof AuthenticatorRow)[];
const BY_USERNAME = fixedSelectFirst('authenticators', AUTHENTICATOR_COLUMNS, ['method', 'username']);
const BY_FINGERPRINT = fixedSelectFirst('authenticators', AUTHENTICATOR_COLUMNS, [
  'method',
  'cert_fingerprint',
]);
const BY_TBS_HASH = fixedSelectFirst('authenticators', AUTHENTICATOR_COLUMNS, ['method', 'cert_tbs_sha256']);

export const toAuthenticator = (r: AuthenticatorRow): Authenticator => ({
  id: r.id,
  identityId: r.identity_id,
  method: r.method,
  username: r.username,
  passwordHash: r.password_hash,
  certFingerprint: r.cert_fingerprint,
  certTbsSha256: r.cert_tbs_sha256,
  certPem: r.cert_pem,
  caId: r.ca_id,
  isExtendable: r.is_extendable,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export type NewAuthenticator = Pick<Authenticator, 'id' | 'identityId' | 'method'> &
  Partial<
    Pick<
      Authenticator,
      'username' | 'passwordHash' | 'certFingerprint' | 'certTbsSha256' | 'certPem' | 'caId' | 'isExtendable'
    >
  >;

export const authenticatorsRepository = {
  async insert(db: Db, a: NewAuthenticator): Promise<Authenticator> {
    const [row] = await db('authenticators')
      .insert({
        id: a.id,
        identity_id: a.identityId,
        method: a.method,
        username: a.username ?? null,
        password_hash: a.passwordHash ?? null,
        cert_fingerprint: a.certFingerprint ?? null,
        cert_tbs_sha256: a.certTbsSha256 ?? null,
        cert_pem: a.certPem ?? null,
        ca_id: a.caId ?? null,
        is_extendable: a.isExtendable ?? false,
      })
      .returning('*');
    return toAuthenticator(row);
  },

  async findById(db: Db, id: string): Promise<Authenticator | undefined> {
    const row = await db<AuthenticatorRow>('authenticators').where({ id }).first();
    return row && toAuthenticator(row);
  },

  async findByUsername(db: Db, username: string): Promise<Authenticator | undefined> {
    const [row] = await runFixed<AuthenticatorRow>(db, BY_USERNAME, ['updb', username]);
    return row && toAuthenticator(row);
  },

  async findByFingerprint(db: Db, fingerprint: string): Promise<Authenticator | undefined> {
    const [row] = await runFixed<AuthenticatorRow>(db, BY_FINGERPRINT, ['cert', fingerprint]);
    return row && toAuthenticator(row);
  },

  /**
   * The cert authenticator of this certificate: its exact DER (the fingerprint), else another
   * encoding of the same signed content (the tbsCertificate hash), e.g. a re-encoded signature.
   */
  async findByCertificate(
    db: Db,
    cert: { fingerprint: string; tbsSha256: string },
  ): Promise<Authenticator | undefined> {
    const exact = await this.findByFingerprint(db, cert.fingerprint);
    if (exact) return exact;
    const [row] = await runFixed<AuthenticatorRow>(db, BY_TBS_HASH, ['cert', cert.tbsSha256]);
    return row && toAuthenticator(row);
  },

  /** Cert authenticators in id order after `afterId`, for one pass over all of them. */
  async certificatesAfter(
    db: Db,
    afterId: string,
    limit: number,
  ): Promise<Pick<Authenticator, 'id' | 'certPem' | 'caId'>[]> {
    const rows: Pick<AuthenticatorRow, 'id' | 'cert_pem' | 'ca_id'>[] = await db('authenticators')
      .where({ method: 'cert' })
      .andWhere('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .select('id', 'cert_pem', 'ca_id');
    return rows.map((r) => ({ id: r.id, certPem: r.cert_pem, caId: r.ca_id }));
  },

  async listForIdentity(db: Db, identityId: string): Promise<Authenticator[]> {
    const rows = await db<AuthenticatorRow>('authenticators')
      .where({ identity_id: identityId })
      .orderBy('method');
    return rows.map(toAuthenticator);
  },

  async listFor(db: Db, identityIds: string[]): Promise<Authenticator[]> {
    if (identityIds.length === 0) return [];
    const rows = await db<AuthenticatorRow>('authenticators').whereIn('identity_id', identityIds);
    return rows.map(toAuthenticator);
  },

  async list(db: Db, q: ListQuery): Promise<ListPage<Authenticator>> {
    const page = await runListQuery<AuthenticatorRow>(db('authenticators').select('*'), q, 'id');
    return mapPage(page, (rows) => rows.map(toAuthenticator));
  },

  async setPassword(db: Db, id: string, passwordHash: string): Promise<void> {
    await db('authenticators').where({ id }).update({ password_hash: passwordHash, updated_at: db.fn.now() });
  },

  async delete(db: Db, id: string): Promise<Authenticator | undefined> {
    const [row] = await db('authenticators').where({ id }).delete().returning('*');
    return row && toAuthenticator(row);
  },
};
