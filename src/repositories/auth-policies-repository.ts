import type { Db } from '../db/create-database.js';
import { mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';

/** What a login over the limit does: end the oldest session, or be refused. */
export type SessionLimitAction = 'evictOldest' | 'refuse';

/** How many fully authenticated API sessions an identity may hold at once; `max` 0: no limit. */
export interface SessionLimit {
  max: number;
  onLimit: SessionLimitAction;
}

export interface AuthPolicy {
  id: string;
  name: string;
  primary: {
    cert: {
      allowed: boolean;
      allowExpiredCerts: boolean;
      /** A certificate login yields tokens bound to the certificate (RFC 8705 §3). */
      bindTokens: boolean;
    };
    updb: {
      allowed: boolean;
      minPasswordLength: number;
      requireSpecialChar: boolean;
      requireNumberChar: boolean;
      requireMixedCase: boolean;
      maxAttempts: number;
      lockoutDurationMinutes: number;
    };
    extJwt: { allowed: boolean; allowedSigners: string[] };
    /** A passkey alone (passwordless, with user verification) may sign in. */
    passkey: { allowed: boolean };
  };
  /** `requirePasskey`: a passkey is owed as a second factor. */
  secondary: { requireTotp: boolean; requireExtJwt: string | null; requirePasskey: boolean };
  sessions: SessionLimit;
  createdAt: Date;
  updatedAt: Date;
}

export type AuthPolicyInput = Omit<AuthPolicy, 'id' | 'createdAt' | 'updatedAt'>;

interface AuthPolicyRow {
  id: string;
  name: string;
  cert_allowed: boolean;
  cert_allow_expired: boolean;
  cert_bind_tokens: boolean;
  updb_allowed: boolean;
  updb_min_password_length: number;
  updb_require_special_char: boolean;
  updb_require_number_char: boolean;
  updb_require_mixed_case: boolean;
  updb_max_attempts: number;
  updb_lockout_duration_minutes: number;
  ext_jwt_allowed: boolean;
  secondary_require_totp: boolean;
  secondary_require_ext_jwt_signer_id: string | null;
  secondary_require_passkey: boolean;
  primary_passkey_allowed: boolean;
  sessions_max: number;
  sessions_on_limit: SessionLimitAction;
  created_at: Date;
  updated_at: Date;
}

export const DEFAULT_POLICY_ID = 'default';

const toPolicy = (r: AuthPolicyRow, allowedSigners: string[]): AuthPolicy => ({
  id: r.id,
  name: r.name,
  primary: {
    cert: {
      allowed: r.cert_allowed,
      allowExpiredCerts: r.cert_allow_expired,
      bindTokens: r.cert_bind_tokens,
    },
    updb: {
      allowed: r.updb_allowed,
      minPasswordLength: r.updb_min_password_length,
      requireSpecialChar: r.updb_require_special_char,
      requireNumberChar: r.updb_require_number_char,
      requireMixedCase: r.updb_require_mixed_case,
      maxAttempts: r.updb_max_attempts,
      lockoutDurationMinutes: r.updb_lockout_duration_minutes,
    },
    extJwt: { allowed: r.ext_jwt_allowed, allowedSigners },
    passkey: { allowed: r.primary_passkey_allowed },
  },
  secondary: {
    requireTotp: r.secondary_require_totp,
    requireExtJwt: r.secondary_require_ext_jwt_signer_id,
    requirePasskey: r.secondary_require_passkey,
  },
  sessions: { max: r.sessions_max, onLimit: r.sessions_on_limit },
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toRow = (p: AuthPolicyInput) => ({
  name: p.name,
  cert_allowed: p.primary.cert.allowed,
  cert_allow_expired: p.primary.cert.allowExpiredCerts,
  cert_bind_tokens: p.primary.cert.bindTokens,
  updb_allowed: p.primary.updb.allowed,
  updb_min_password_length: p.primary.updb.minPasswordLength,
  updb_require_special_char: p.primary.updb.requireSpecialChar,
  updb_require_number_char: p.primary.updb.requireNumberChar,
  updb_require_mixed_case: p.primary.updb.requireMixedCase,
  updb_max_attempts: p.primary.updb.maxAttempts,
  updb_lockout_duration_minutes: p.primary.updb.lockoutDurationMinutes,
  ext_jwt_allowed: p.primary.extJwt.allowed,
  secondary_require_totp: p.secondary.requireTotp,
  secondary_require_ext_jwt_signer_id: p.secondary.requireExtJwt,
  secondary_require_passkey: p.secondary.requirePasskey,
  primary_passkey_allowed: p.primary.passkey.allowed,
  sessions_max: p.sessions.max,
  sessions_on_limit: p.sessions.onLimit,
});

async function signersOf(db: Db, ids: string[]): Promise<Map<string, string[]>> {
  const map = new Map<string, string[]>();
  if (ids.length === 0) return map;
  const rows = await db('auth_policy_allowed_signers').whereIn('auth_policy_id', ids).orderBy('signer_id');
  for (const r of rows as { auth_policy_id: string; signer_id: string }[]) {
    map.set(r.auth_policy_id, [...(map.get(r.auth_policy_id) ?? []), r.signer_id]);
  }
  return map;
}

async function replaceSigners(db: Db, policyId: string, signerIds: string[]): Promise<void> {
  await db('auth_policy_allowed_signers').where({ auth_policy_id: policyId }).delete();
  const unique = [...new Set(signerIds)];
  if (unique.length > 0) {
    await db('auth_policy_allowed_signers').insert(
      unique.map((signer_id) => ({ auth_policy_id: policyId, signer_id })),
    );
  }
}

/**
 * The policy's allowed signers as one more column beside its row (`allowed_signers`, sorted), for
 * any query that has `auth_policies` in its FROM.
 */
export const SIGNERS_COLUMN = `ARRAY(SELECT s.signer_id FROM auth_policy_allowed_signers s
            WHERE s.auth_policy_id = auth_policies.id ORDER BY s.signer_id) AS allowed_signers`;
export const withSigners = (db: Db) => db.raw(SIGNERS_COLUMN);

/**
 * A policy selected as `to_jsonb(auth_policies.*)` beside another table's row, with its signers
 * from `withSigners`. JSON carries the timestamps as text.
 */
export function policyFromJson(json: unknown, allowedSigners: string[]): AuthPolicy {
  const r = (typeof json === 'string' ? JSON.parse(json) : json) as AuthPolicyRow;
  return toPolicy(
    { ...r, created_at: new Date(r.created_at), updated_at: new Date(r.updated_at) },
    allowedSigners,
  );
}

export const authPoliciesRepository = {
  /** One statement: the row with its allowed signers. */
  async findById(db: Db, id: string): Promise<AuthPolicy | undefined> {
    const row: (AuthPolicyRow & { allowed_signers: string[] }) | undefined = await db('auth_policies')
      .where({ id })
      .first('*', withSigners(db));
    return row && toPolicy(row, row.allowed_signers);
  },

  /** Reads the policy and locks its row until the transaction ends (read-modify-write of PATCH). */
  async findForUpdate(db: Db, id: string): Promise<AuthPolicy | undefined> {
    const row = await db<AuthPolicyRow>('auth_policies').where({ id }).forUpdate().first();
    return row && toPolicy(row, (await signersOf(db, [id])).get(id) ?? []);
  },

  /** Maps rows of a list query to policies (one extra query for the allowed signers). */
  async hydrate(db: Db, rows: AuthPolicyRow[]): Promise<AuthPolicy[]> {
    const signers = await signersOf(
      db,
      rows.map((r) => r.id),
    );
    return rows.map((r) => toPolicy(r, signers.get(r.id) ?? []));
  },

  /** One page of policies for a list query, with the total count. */
  async list(db: Db, q: ListQuery): Promise<ListPage<AuthPolicy>> {
    const page = await runListQuery<AuthPolicyRow>(db('auth_policies').select('*'), q, 'id');
    return mapPage(page, (rows) => authPoliciesRepository.hydrate(db, rows));
  },

  /** Writes the policy and its allowed signers; run inside a transaction. */
  async insert(db: Db, id: string, p: AuthPolicyInput): Promise<void> {
    await db('auth_policies').insert({ id, ...toRow(p) });
    await replaceSigners(db, id, p.primary.extJwt.allowedSigners);
  },

  async update(db: Db, id: string, p: AuthPolicyInput): Promise<boolean> {
    const n = await db('auth_policies')
      .where({ id })
      .update({ ...toRow(p), updated_at: db.fn.now() });
    if (n === 0) return false;
    await replaceSigners(db, id, p.primary.extJwt.allowedSigners);
    return true;
  },

  async delete(db: Db, id: string): Promise<boolean> {
    // `returning`: knex-pglite answers a bare delete with a result object, not a row count.
    const rows = await db('auth_policies').where({ id }).delete().returning('id');
    return rows.length > 0;
  },

  /** Ids of the identities governed by the policy (their sessions end when `secondary` changes). */
  async identityIdsUsing(db: Db, policyId: string): Promise<string[]> {
    const rows = await db('identities').where({ auth_policy_id: policyId }).orderBy('id').select('id');
    return (rows as { id: string }[]).map((r) => r.id);
  },

  async isInUse(db: Db, policyId: string): Promise<boolean> {
    return (await db('identities').where({ auth_policy_id: policyId }).first('id')) !== undefined;
  },

  /** Whether any policy names the signer, as an allowed primary signer or as its secondary factor. */
  async usesSigner(db: Db, signerId: string): Promise<boolean> {
    const allowed = await db('auth_policy_allowed_signers').where({ signer_id: signerId }).first('signer_id');
    if (allowed) return true;
    const secondary = await db('auth_policies')
      .where({ secondary_require_ext_jwt_signer_id: signerId })
      .first('id');
    return secondary !== undefined;
  },
};
