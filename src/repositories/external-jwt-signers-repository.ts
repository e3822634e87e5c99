import type { Db } from '../db/create-database.js';
import { mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';

/** An external JWT signer. */
export interface ExternalJwtSigner {
  id: string;
  name: string;
  enabled: boolean;
  issuer: string;
  audience: string | null;
  certPem: string | null;
  jwksEndpoint: string | null;
  kid: string | null;
  claimsProperty: string;
  useExternalId: boolean;
  externalAuthUrl: string | null;
  clientId: string | null;
  scopes: string[];
  /** The longest lifetime a JWT of this signer may claim. */
  maxTokenLifetimeMinutes: number;
  createdAt: Date;
  updatedAt: Date;
}

export type ExternalJwtSignerInput = Omit<ExternalJwtSigner, 'id' | 'createdAt' | 'updatedAt'>;

interface SignerRow {
  id: string;
  name: string;
  enabled: boolean;
  issuer: string;
  audience: string | null;
  cert_pem: string | null;
  jwks_endpoint: string | null;
  kid: string | null;
  claims_property: string;
  use_external_id: boolean;
  external_auth_url: string | null;
  client_id: string | null;
  scopes: string[];
  max_token_lifetime_minutes: number;
  created_at: Date;
  updated_at: Date;
}

export const toSigner = (r: SignerRow): ExternalJwtSigner => ({
  id: r.id,
  name: r.name,
  enabled: r.enabled,
  issuer: r.issuer,
  audience: r.audience,
  certPem: r.cert_pem,
  jwksEndpoint: r.jwks_endpoint,
  kid: r.kid,
  claimsProperty: r.claims_property,
  useExternalId: r.use_external_id,
  externalAuthUrl: r.external_auth_url,
  clientId: r.client_id,
  scopes: r.scopes ?? [],
  maxTokenLifetimeMinutes: r.max_token_lifetime_minutes,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toRow = (s: ExternalJwtSignerInput) => ({
  name: s.name,
  enabled: s.enabled,
  issuer: s.issuer,
  audience: s.audience,
  cert_pem: s.certPem,
  jwks_endpoint: s.jwksEndpoint,
  kid: s.kid,
  claims_property: s.claimsProperty,
  use_external_id: s.useExternalId,
  external_auth_url: s.externalAuthUrl,
  client_id: s.clientId,
  scopes: JSON.stringify(s.scopes),
  max_token_lifetime_minutes: s.maxTokenLifetimeMinutes,
});

export const externalJwtSignersRepository = {
  async insert(db: Db, id: string, s: ExternalJwtSignerInput): Promise<ExternalJwtSigner> {
    const [row] = await db('external_jwt_signers')
      .insert({ id, ...toRow(s) })
      .returning('*');
    return toSigner(row);
  },

  async update(db: Db, id: string, s: ExternalJwtSignerInput): Promise<ExternalJwtSigner | undefined> {
    const [row] = await db('external_jwt_signers')
      .where({ id })
      .update({ ...toRow(s), updated_at: db.fn.now() })
      .returning('*');
    return row && toSigner(row);
  },

  async findById(db: Db, id: string): Promise<ExternalJwtSigner | undefined> {
    const row = await db<SignerRow>('external_jwt_signers').where({ id }).first();
    return row && toSigner(row);
  },

  /** The row locked for the rest of the transaction (read-modify-write without lost updates). */
  async findForUpdate(db: Db, id: string): Promise<ExternalJwtSigner | undefined> {
    const row = await db<SignerRow>('external_jwt_signers').where({ id }).forUpdate().first();
    return row && toSigner(row);
  },

  /** Which of `ids` exist (policies may only name existing signers: unknown → 404). */
  async existing(db: Db, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await db('external_jwt_signers').whereIn('id', ids).select('id');
    return new Set((rows as { id: string }[]).map((r) => r.id));
  },

  /** One page of signers for a list query; `onlyEnabled` for the client API. */
  async list(db: Db, q: ListQuery, onlyEnabled = false): Promise<ListPage<ExternalJwtSigner>> {
    const qb = db('external_jwt_signers').select('*');
    if (onlyEnabled) qb.where({ enabled: true });
    const page = await runListQuery<SignerRow>(qb, q, 'id');
    return mapPage(page, (rows) => rows.map(toSigner));
  },

  async listEnabled(db: Db): Promise<ExternalJwtSigner[]> {
    const rows = await db<SignerRow>('external_jwt_signers').where({ enabled: true }).orderBy('id');
    return rows.map(toSigner);
  },

  async delete(db: Db, id: string): Promise<boolean> {
    // `returning`: knex-pglite answers a bare delete with a result object, not a row count.
    const rows = await db('external_jwt_signers').where({ id }).delete().returning('id');
    return rows.length > 0;
  },
};
