import type { Db } from '../db/create-database.js';
import { mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';

/** A registered 3rd-party CA. */
export interface Ca {
  id: string;
  name: string;
  certPem: string;
  fingerprint: string;
  isAuthEnabled: boolean;
  isOttCaEnrollmentEnabled: boolean;
  isAutoCaEnrollmentEnabled: boolean;
  identityRoles: string[];
  /** Name of an identity made by auto CA enrollment, with `[caName]`-style placeholders. */
  identityNameFormat: string;
  isVerified: boolean;
  verificationToken: string;
  createdAt: Date;
  updatedAt: Date;
}

export type NewCa = Omit<Ca, 'createdAt' | 'updatedAt' | 'isVerified' | 'identityNameFormat'> & {
  isVerified?: boolean;
  identityNameFormat?: string;
};

export type CaChanges = Partial<
  Pick<
    Ca,
    | 'name'
    | 'isAuthEnabled'
    | 'isOttCaEnrollmentEnabled'
    | 'isAutoCaEnrollmentEnabled'
    | 'identityRoles'
    | 'identityNameFormat'
    | 'isVerified'
  >
>;

interface CaRow {
  id: string;
  name: string;
  cert_pem: string;
  fingerprint: string;
  is_auth_enabled: boolean;
  is_ott_ca_enrollment_enabled: boolean;
  is_auto_ca_enrollment_enabled: boolean;
  identity_roles: string[];
  identity_name_format: string;
  is_verified: boolean;
  verification_token: string;
  created_at: Date;
  updated_at: Date;
}

export const toCa = (r: CaRow): Ca => ({
  id: r.id,
  name: r.name,
  certPem: r.cert_pem,
  fingerprint: r.fingerprint,
  isAuthEnabled: r.is_auth_enabled,
  isOttCaEnrollmentEnabled: r.is_ott_ca_enrollment_enabled,
  isAutoCaEnrollmentEnabled: r.is_auto_ca_enrollment_enabled,
  identityRoles: r.identity_roles ?? [],
  identityNameFormat: r.identity_name_format,
  isVerified: r.is_verified,
  verificationToken: r.verification_token,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const columnsOf = (c: CaChanges) => {
  const cols: Record<string, unknown> = {};
  if (c.name !== undefined) cols.name = c.name;
  if (c.isAuthEnabled !== undefined) cols.is_auth_enabled = c.isAuthEnabled;
  if (c.isOttCaEnrollmentEnabled !== undefined)
    cols.is_ott_ca_enrollment_enabled = c.isOttCaEnrollmentEnabled;
  if (c.isAutoCaEnrollmentEnabled !== undefined) {
    cols.is_auto_ca_enrollment_enabled = c.isAutoCaEnrollmentEnabled;
  }
  if (c.identityRoles !== undefined) cols.identity_roles = JSON.stringify(c.identityRoles);
  if (c.identityNameFormat !== undefined) cols.identity_name_format = c.identityNameFormat;
  if (c.isVerified !== undefined) cols.is_verified = c.isVerified;
  return cols;
};

export const casRepository = {
  async insert(db: Db, ca: NewCa): Promise<Ca> {
    const [row] = await db('cas')
      .insert({
        id: ca.id,
        name: ca.name,
        cert_pem: ca.certPem,
        fingerprint: ca.fingerprint,
        is_auth_enabled: ca.isAuthEnabled,
        is_ott_ca_enrollment_enabled: ca.isOttCaEnrollmentEnabled,
        is_auto_ca_enrollment_enabled: ca.isAutoCaEnrollmentEnabled,
        identity_roles: JSON.stringify(ca.identityRoles),
        ...(ca.identityNameFormat !== undefined ? { identity_name_format: ca.identityNameFormat } : {}),
        is_verified: ca.isVerified ?? false,
        verification_token: ca.verificationToken,
      })
      .returning('*');
    return toCa(row);
  },

  async findById(db: Db, id: string): Promise<Ca | undefined> {
    const row = await db<CaRow>('cas').where({ id }).first();
    return row && toCa(row);
  },

  async update(db: Db, id: string, changes: CaChanges): Promise<Ca | undefined> {
    const [row] = await db('cas')
      .where({ id })
      .update({ ...columnsOf(changes), updated_at: db.fn.now() })
      .returning('*');
    return row && toCa(row);
  },

  /** Marks the CA verified only while its token is still `token` (one atomic statement). */
  async markVerified(db: Db, id: string, token: string): Promise<boolean> {
    const n = await db('cas')
      .where({ id, verification_token: token })
      .update({ is_verified: true, updated_at: db.fn.now() });
    return n > 0;
  },

  async delete(db: Db, id: string): Promise<boolean> {
    // `returning`: knex-pglite answers a bare delete with a result object, not a row count.
    const rows = await db('cas').where({ id }).delete().returning('id');
    return rows.length > 0;
  },

  /** One page of CAs for a list query, with the total count. */
  async list(db: Db, q: ListQuery): Promise<ListPage<Ca>> {
    const page = await runListQuery<CaRow>(db('cas').select('*'), q, 'id');
    return mapPage(page, (rows) => rows.map(toCa));
  },

  /** CAs that may authenticate anyone: verified and auth-enabled. */
  async listAuthEnabled(db: Db): Promise<Ca[]> {
    const rows = await db<CaRow>('cas').where({ is_verified: true, is_auth_enabled: true }).orderBy('id');
    return rows.map(toCa);
  },

  /** CAs that may create identities on first contact: verified, with auto CA enrollment on. */
  async listAutoEnrollEnabled(db: Db): Promise<Ca[]> {
    const rows = await db<CaRow>('cas')
      .where({ is_verified: true, is_auto_ca_enrollment_enabled: true })
      .orderBy('id');
    return rows.map(toCa);
  },
};
