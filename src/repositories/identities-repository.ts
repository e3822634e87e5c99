import type { Db } from '../db/create-database.js';
import {
  policyFromJson,
  SIGNERS_COLUMN,
  type AuthPolicy,
  type SessionLimit,
} from './auth-policies-repository.js';
import { fixedSelectFirst } from './fixed-select.js';
import { fixedStatement, runFixed } from '../db/fixed-statement.js';
import { countedRows, mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';

export type IdentityType = 'User' | 'Device' | 'Service' | 'Default';

export interface Identity {
  id: string;
  name: string;
  type: IdentityType;
  isAdmin: boolean;
  isDefaultAdmin: boolean;
  externalId: string | null;
  authPolicyId: string;
  tags: Record<string, unknown>;
  disabled: boolean;
  disabledUntil: Date | null;
  tokenGeneration: number;
  /** What the identity may do besides what isAdmin grants (`token-introspection`). */
  permissions: string[];
  createdAt: Date;
  updatedAt: Date;
}

interface IdentityRow {
  id: string;
  name: string;
  type: IdentityType;
  is_admin: boolean;
  is_default_admin: boolean;
  external_id: string | null;
  auth_policy_id: string;
  tags: Record<string, unknown>;
  disabled: boolean;
  disabled_until: Date | null;
  token_generation: number;
  permissions: string[] | string | null;
  created_at: Date;
  updated_at: Date;
}

/** Every column, named: a prepared statement's result must not change when a migration adds one. */
export const IDENTITY_COLUMNS = [
  'id',
  'name',
  'type',
  'is_admin',
  'is_default_admin',
  'external_id',
  'auth_policy_id',
  'tags',
  'disabled',
  'disabled_until',
  'token_generation',
  'permissions',
  'created_at',
  'updated_at',
] as const satisfies readonly (keyof IdentityRow)[];

const FIND_BY_ID = fixedSelectFirst('identities', IDENTITY_COLUMNS, ['id']);
/** The identity, its policy as JSON and the policy's allowed signers: the reads of every login step. */
const WITH_POLICY = fixedStatement(`select ${IDENTITY_COLUMNS.map((c) => `"identities"."${c}"`).join(', ')},
  to_jsonb(auth_policies.*) AS policy, ${SIGNERS_COLUMN}
  from "identities" inner join "auth_policies" on "auth_policies"."id" = "identities"."auth_policy_id"
  where "identities"."id" = ? limit 1`);

/** jsonb arrives parsed from node-postgres and PGlite; a string is parsed, anything else is none. */
function permissionsOf(v: IdentityRow['permissions']): string[] {
  const list: unknown = typeof v === 'string' ? JSON.parse(v) : v;
  return Array.isArray(list) ? list.filter((p): p is string => typeof p === 'string') : [];
}
/**
 * Takes the identity's session-limit lock (a transaction-scoped advisory lock: it conflicts with
 * nothing but itself, so no row operation of other writers can deadlock with it) and reads its
 * policy's limit as it is now. No row when the identity is gone.
 */
const LOCK_SESSIONS =
  fixedStatement(`select pg_advisory_xact_lock(hashtext('svc:sessions:' || "identities"."id")) as "locked", "auth_policies"."sessions_max", "auth_policies"."sessions_on_limit"
  from "identities" inner join "auth_policies" on "auth_policies"."id" = "identities"."auth_policy_id"
  where "identities"."id" = ?`);

export const toIdentity = (r: IdentityRow): Identity => ({
  id: r.id,
  name: r.name,
  type: r.type,
  isAdmin: r.is_admin,
  isDefaultAdmin: r.is_default_admin,
  externalId: r.external_id,
  authPolicyId: r.auth_policy_id,
  tags: r.tags ?? {},
  disabled: r.disabled,
  disabledUntil: r.disabled_until,
  tokenGeneration: r.token_generation,
  permissions: permissionsOf(r.permissions),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export interface NewIdentity {
  id: string;
  name: string;
  type: IdentityType;
  isAdmin: boolean;
  isDefaultAdmin?: boolean;
  externalId?: string | null;
  authPolicyId: string;
  tags?: Record<string, unknown>;
  permissions?: string[];
}

export interface IdentityChanges {
  name?: string;
  type?: IdentityType;
  isAdmin?: boolean;
  externalId?: string | null;
  authPolicyId?: string;
  tags?: Record<string, unknown>;
  permissions?: string[];
  disabled?: boolean;
  disabledUntil?: Date | null;
}

const columnsOf = (c: IdentityChanges) => {
  const cols: Record<string, unknown> = {};
  if (c.name !== undefined) cols.name = c.name;
  if (c.type !== undefined) cols.type = c.type;
  if (c.isAdmin !== undefined) cols.is_admin = c.isAdmin;
  if (c.externalId !== undefined) cols.external_id = c.externalId;
  if (c.authPolicyId !== undefined) cols.auth_policy_id = c.authPolicyId;
  if (c.tags !== undefined) cols.tags = JSON.stringify(c.tags);
  if (c.permissions !== undefined) cols.permissions = JSON.stringify(c.permissions);
  if (c.disabled !== undefined) cols.disabled = c.disabled;
  if (c.disabledUntil !== undefined) cols.disabled_until = c.disabledUntil;
  return cols;
};

export const identitiesRepository = {
  async insert(db: Db, i: NewIdentity): Promise<Identity> {
    const [row] = await db('identities')
      .insert({
        id: i.id,
        name: i.name,
        type: i.type,
        is_admin: i.isAdmin,
        is_default_admin: i.isDefaultAdmin ?? false,
        external_id: i.externalId ?? null,
        auth_policy_id: i.authPolicyId,
        tags: JSON.stringify(i.tags ?? {}),
        permissions: JSON.stringify(i.permissions ?? []),
      })
      .returning('*');
    return toIdentity(row);
  },

  async findById(db: Db, id: string): Promise<Identity | undefined> {
    const [row] = await runFixed<IdentityRow>(db, FIND_BY_ID, [id]);
    return row && toIdentity(row);
  },

  /** An identity with the policy that governs it, in one statement. */
  async findWithPolicy(db: Db, id: string): Promise<{ identity: Identity; policy: AuthPolicy } | undefined> {
    const [row] = await runFixed<IdentityRow & { policy: unknown; allowed_signers: string[] }>(
      db,
      WITH_POLICY,
      [id],
    );
    return row && { identity: toIdentity(row), policy: policyFromJson(row.policy, row.allowed_signers) };
  },

  /**
   * Serialises every session-limit check of the identity until `db` (a transaction) ends, and
   * answers its policy's limit; undefined when the identity is gone. What the sessions are must be
   * read by a later statement: this one's snapshot was taken before it waited for the lock.
   */
  async lockSessions(db: Db, id: string): Promise<SessionLimit | undefined> {
    const [row] = await runFixed<{ sessions_max: number; sessions_on_limit: SessionLimit['onLimit'] }>(
      db,
      LOCK_SESSIONS,
      [id],
    );
    return row && { max: row.sessions_max, onLimit: row.sessions_on_limit };
  },

  /** Reads and row-locks an identity, so that checks and changes made in `db` see one state. */
  async findByIdForUpdate(db: Db, id: string): Promise<Identity | undefined> {
    const row = await db<IdentityRow>('identities').where({ id }).forUpdate().first();
    return row && toIdentity(row);
  },

  /**
   * Holds the identity against deletion (FOR KEY SHARE, which a delete's FOR UPDATE waits for) until
   * `db` ends; false when it is gone.
   */
  async holdAgainstDelete(db: Db, id: string): Promise<boolean> {
    return (await db('identities').where({ id }).forKeyShare().first('id')) !== undefined;
  },

  /** One page of a list query over identities, ties broken by id. */
  async list(db: Db, q: ListQuery): Promise<ListPage<Identity>> {
    const page = await runListQuery<IdentityRow>(db('identities').select('*'), q, 'id', () =>
      countedRows(db, 'identities'),
    );
    return mapPage(page, (rows) => rows.map(toIdentity));
  },

  async findByExternalId(db: Db, externalId: string): Promise<Identity | undefined> {
    const row = await db<IdentityRow>('identities').where({ external_id: externalId }).first();
    return row && toIdentity(row);
  },

  async findByName(db: Db, name: string): Promise<Identity | undefined> {
    const row = await db<IdentityRow>('identities').where({ name }).first();
    return row && toIdentity(row);
  },

  /**
   * Names in use that are `prefix` itself or `prefix` followed by `suffixLength` more characters.
   * Compared by code points with `left`/`char_length`, so no character of the prefix is a pattern.
   */
  async namesStartingWith(db: Db, prefix: string, suffixLength: number): Promise<Set<string>> {
    const length = [...prefix].length;
    const rows: { name: string }[] = await db('identities')
      .select('name')
      .whereRaw('left(name, ?) = ? and char_length(name) in (?, ?)', [
        length,
        prefix,
        length,
        length + suffixLength,
      ]);
    return new Set(rows.map((r) => r.name));
  },

  async hasAdmin(db: Db): Promise<boolean> {
    return (await db('identities').where({ is_admin: true }).first('id')) !== undefined;
  },

  /** Applies changes; with `bumpGeneration` every token issued so far stops working. */
  async update(
    db: Db,
    id: string,
    changes: IdentityChanges,
    bumpGeneration = false,
  ): Promise<Identity | undefined> {
    const [row] = await db('identities')
      .where({ id })
      .update({
        ...columnsOf(changes),
        ...(bumpGeneration ? { token_generation: db.raw('token_generation + 1') } : {}),
        updated_at: db.fn.now(),
      })
      .returning('*');
    return row && toIdentity(row);
  },

  async delete(db: Db, id: string): Promise<Identity | undefined> {
    const [row] = await db('identities').where({ id }).delete().returning('*');
    return row && toIdentity(row);
  },
};

export const roleAttributesRepository = {
  async list(db: Db, identityId: string): Promise<string[]> {
    const rows = await db('identity_role_attributes').where({ identity_id: identityId }).orderBy('attribute');
    return rows.map((r: { attribute: string }) => r.attribute);
  },

  async listFor(db: Db, identityIds: string[]): Promise<Map<string, string[]>> {
    const map = new Map<string, string[]>();
    if (identityIds.length === 0) return map;
    const rows = await db('identity_role_attributes')
      .whereIn('identity_id', identityIds)
      .orderBy('attribute');
    for (const r of rows as { identity_id: string; attribute: string }[]) {
      map.set(r.identity_id, [...(map.get(r.identity_id) ?? []), r.attribute]);
    }
    return map;
  },

  async replace(db: Db, identityId: string, attributes: string[]): Promise<void> {
    await db('identity_role_attributes').where({ identity_id: identityId }).delete();
    const unique = [...new Set(attributes)];
    if (unique.length > 0) {
      await db('identity_role_attributes').insert(
        unique.map((attribute) => ({ identity_id: identityId, attribute })),
      );
    }
  },
};
