import type { Db } from '../db/create-database.js';
import { mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';
import { fixedStatement, runFixed } from '../db/fixed-statement.js';
import { auditRowsCte, auditRowsJson, type AuditEventInsert } from './audit-events-repository.js';
import { oidcPayloadsRepository, type OidcPayloadRow } from './oidc-payloads-repository.js';

export type ApiSessionKind = 'legacy' | 'oidc';

export interface ApiSession {
  id: string;
  identityId: string;
  kind: ApiSessionKind;
  amr: string[];
  configTypes: string[];
  isCertExtendable: boolean;
  mfaRequired: boolean;
  mfaComplete: boolean;
  /** The primary login method (`password`, `cert`, `ext-jwt`); null for sessions older than the column. */
  authMethod: string | null;
  /** The client address of the request that opened the session, as the request log writes it. */
  ipAddress: string | null;
  createdAt: Date;
  lastActivityAt: Date;
  expiresAt: Date;
}

interface ApiSessionRow {
  id: string;
  identity_id: string;
  kind: ApiSessionKind;
  token_hash: string | null;
  amr: string[];
  config_types: string[];
  is_cert_extendable: boolean;
  mfa_required: boolean;
  mfa_complete: boolean;
  auth_method: string | null;
  ip_address: string | null;
  created_at: Date;
  last_activity_at: Date;
  expires_at: Date;
}

const toApiSession = (r: ApiSessionRow): ApiSession => ({
  id: r.id,
  identityId: r.identity_id,
  kind: r.kind,
  amr: r.amr ?? [],
  configTypes: r.config_types ?? [],
  isCertExtendable: r.is_cert_extendable,
  mfaRequired: r.mfa_required,
  mfaComplete: r.mfa_complete,
  authMethod: r.auth_method ?? null,
  ipAddress: r.ip_address ?? null,
  createdAt: r.created_at,
  lastActivityAt: r.last_activity_at,
  expiresAt: r.expires_at,
});

export type NewApiSession = Omit<ApiSession, 'createdAt' | 'lastActivityAt'> & {
  tokenHash: string | null;
  /** Default: the database's clock. */
  createdAt?: Date;
};

const INSERT_SQL = `insert into "api_sessions" ("id", "identity_id", "kind", "token_hash", "amr", "config_types", "is_cert_extendable", "mfa_required", "mfa_complete", "auth_method", "ip_address", "expires_at", "created_at") values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?::timestamptz, now()))`;
/** An OIDC login's API session beside its login facts and its audit events (insertWithLoginFacts). */
const INSERT_WITH_LOGIN_FACTS = oidcPayloadsRepository.upsertAfter(
  `with "api_session" as (${INSERT_SQL}), ${auditRowsCte()} `,
);
/** An OIDC login's API session and its audit events, when a session limit opens it before its grant exists. */
const INSERT = fixedStatement(`with ${auditRowsCte()} ${INSERT_SQL}`);

/** INSERT_SQL's values. */
const insertBindings = (s: NewApiSession) => [
  s.id,
  s.identityId,
  s.kind,
  s.tokenHash,
  JSON.stringify(s.amr),
  JSON.stringify(s.configTypes),
  s.isCertExtendable,
  s.mfaRequired,
  s.mfaComplete,
  s.authMethod ?? null,
  s.ipAddress ?? null,
  s.expiresAt,
  s.createdAt ?? null,
];

/**
 * The sessions a session limit counts: live and fully authenticated (no second factor still owed),
 * oldest first. `id <> ?` leaves out the session whose MFA step is being completed. The identity is
 * held against deletion (FOR KEY SHARE) in the same statement: no row at all once it is gone, one
 * row with a null id when it has no such session.
 */
const COUNTED = fixedStatement(
  `with "held" as (select "id" from "identities" where "id" = ? for key share)
   select "s"."id", "s"."kind" from "held" left join "api_sessions" "s" on "s"."identity_id" = "held"."id"
     and "s"."expires_at" > ? and ("s"."mfa_required" = false or "s"."mfa_complete" = true) and "s"."id" <> ?
   order by "s"."created_at", "s"."id"`,
);

/** A live API session as the lists show it: with its identity's name and its last activity. */
export interface LiveApiSession {
  id: string;
  identityId: string;
  identityName: string;
  kind: ApiSessionKind;
  authMethod: string | null;
  ipAddress: string | null;
  amr: string[];
  mfaRequired: boolean;
  mfaComplete: boolean;
  createdAt: Date;
  lastActivityAt: Date;
  expiresAt: Date;
}

/** The columns of `liveSessions`, which the list fields (schemas/api-session-schemas.ts) name. */
interface LiveApiSessionRow {
  id: string;
  identity_id: string;
  identity_name: string;
  kind: ApiSessionKind;
  auth_method: string | null;
  ip_address: string | null;
  amr: string[];
  mfa_required: boolean;
  mfa_complete: boolean;
  created_at: Date | string;
  last_activity_at: Date | string;
  expires_at: Date | string;
}

const toLive = (r: LiveApiSessionRow): LiveApiSession => ({
  id: r.id,
  identityId: r.identity_id,
  identityName: r.identity_name,
  kind: r.kind,
  authMethod: r.auth_method ?? null,
  ipAddress: r.ip_address ?? null,
  amr: r.amr ?? [],
  mfaRequired: r.mfa_required,
  mfaComplete: r.mfa_complete,
  createdAt: new Date(r.created_at),
  lastActivityAt: new Date(r.last_activity_at),
  expiresAt: new Date(r.expires_at),
});

/**
 * The last use of an OIDC session, read rather than recorded (a refresh writes nothing more for
 * it): the newest consume of a code or refresh token of its grant and the issue of its newest
 * refresh token. The grant is found through the login facts, whose `uid` is the session id.
 */
const OIDC_LAST_ACTIVITY = `(select max(greatest(t.consumed_at,
      case when jsonb_typeof(t.payload -> 'iat') = 'number'
           then to_timestamp((t.payload ->> 'iat')::double precision) end))
    from oidc_payloads f
    join oidc_payloads t on t.grant_id = f.grant_id and t.model in ('AuthorizationCode', 'RefreshToken')
   where f.model = 'SvcLogin' and f.uid = s.id)`;

export interface LiveSessionsScope {
  now: Date;
  /**
   * edge.oidc.maxSessionDuration in seconds: a legacy session never outlives it from its login,
   * whatever a row written before that ceiling says (session-service.ts shows and enforces the same).
   */
  legacyMaxSeconds: number;
  /** Only the sessions of this identity. */
  identityId?: string;
}

/**
 * Live sessions as a derived table whose columns are the list fields', so filters and sorts on
 * the derived values (the last activity, the capped expiry) work like any other.
 */
function liveSessions(db: Db, scope: LiveSessionsScope) {
  const inner = db('api_sessions as s')
    .join('identities as i', 'i.id', 's.identity_id')
    .where('s.expires_at', '>', scope.now)
    .modify((q) => {
      if (scope.identityId !== undefined) q.andWhere('s.identity_id', scope.identityId);
    })
    .select(
      's.id',
      's.identity_id',
      'i.name as identity_name',
      's.kind',
      's.auth_method',
      's.ip_address',
      's.amr',
      's.mfa_required',
      's.mfa_complete',
      's.created_at',
      db.raw(
        `case when s.kind = 'oidc' then greatest(s.created_at, ${OIDC_LAST_ACTIVITY}) else s.last_activity_at end as last_activity_at`,
      ),
      db.raw(
        `case when s.kind = 'legacy' then least(s.expires_at, s.created_at + make_interval(secs => ?)) else s.expires_at end as expires_at`,
        [scope.legacyMaxSeconds],
      ),
    );
  return db.from(inner.as('live')).where('live.expires_at', '>', scope.now);
}

export const apiSessionsRepository = {
  /** A page of live sessions (of one identity when the scope names it); never a token hash. */
  async listLive(db: Db, q: ListQuery, scope: LiveSessionsScope): Promise<ListPage<LiveApiSession>> {
    const page = await runListQuery<LiveApiSessionRow>(liveSessions(db, scope).select('*'), q, 'id');
    return mapPage(page, (rows) => rows.map(toLive));
  },

  /** One live session, as the lists show it. */
  async findLive(db: Db, id: string, scope: LiveSessionsScope): Promise<LiveApiSession | undefined> {
    const row: LiveApiSessionRow | undefined = await liveSessions(db, scope)
      .andWhere('live.id', id)
      .first('*');
    return row && toLive(row);
  },

  async insert(db: Db, s: NewApiSession): Promise<ApiSession> {
    const [row] = await db('api_sessions')
      .insert({
        id: s.id,
        identity_id: s.identityId,
        kind: s.kind,
        token_hash: s.tokenHash,
        amr: JSON.stringify(s.amr),
        config_types: JSON.stringify(s.configTypes),
        is_cert_extendable: s.isCertExtendable,
        mfa_required: s.mfaRequired,
        mfa_complete: s.mfaComplete,
        auth_method: s.authMethod,
        ip_address: s.ipAddress,
        expires_at: s.expiresAt,
        ...(s.createdAt ? { created_at: s.createdAt } : {}),
      })
      .returning('*');
    return toApiSession(row);
  },

  /**
   * An OIDC grant's API session, its login facts (a row of `oidc_payloads`) and the login's audit
   * events, written together or not at all: one statement, the inserts as data-modifying WITHs, so
   * no transaction is needed around it. A deleted identity fails it on the session's foreign key.
   */
  async insertWithLoginFacts(
    db: Db,
    s: NewApiSession,
    factsRow: OidcPayloadRow,
    events: readonly AuditEventInsert[] = [],
  ): Promise<void> {
    await oidcPayloadsRepository.upsertWith(
      db,
      INSERT_WITH_LOGIN_FACTS,
      [...insertBindings(s), auditRowsJson(events)],
      factsRow,
    );
  },

  /** One session row and the login's audit events as a fixed statement (an OIDC login under a session limit). */
  async insertFixed(db: Db, s: NewApiSession, events: readonly AuditEventInsert[] = []): Promise<void> {
    await runFixed(db, INSERT, [auditRowsJson(events), ...insertBindings(s)]);
  },

  /** The identity's live, fully authenticated sessions, oldest first, but `excluding`; undefined once the identity is gone. */
  async countedFor(
    db: Db,
    identityId: string,
    now: Date,
    excluding = '',
  ): Promise<{ id: string; kind: ApiSessionKind }[] | undefined> {
    const rows = await runFixed<{ id: string | null; kind: ApiSessionKind | null }>(db, COUNTED, [
      identityId,
      now,
      excluding,
    ]);
    if (rows.length === 0) return undefined;
    return rows.flatMap((r) => (r.id && r.kind ? [{ id: r.id, kind: r.kind }] : []));
  },

  async findById(db: Db, id: string): Promise<ApiSession | undefined> {
    const row = await db<ApiSessionRow>('api_sessions').where({ id }).first();
    return row && toApiSession(row);
  },

  async findByTokenHash(db: Db, tokenHash: string): Promise<ApiSession | undefined> {
    const row = await db<ApiSessionRow>('api_sessions').where({ token_hash: tokenHash }).first();
    return row && toApiSession(row);
  },

  /**
   * Slides the expiry of a still-valid session whose stored expiry is at or before `staleAt`: one
   * statement, so neither a concurrent delete nor concurrent requests on other instances make it
   * write more than once per slack.
   */
  async touch(
    db: Db,
    id: string,
    now: Date,
    expiresAt: Date,
    staleAt: Date,
  ): Promise<ApiSession | undefined> {
    const [row] = await db('api_sessions')
      .where({ id })
      .andWhere('expires_at', '>', now)
      .andWhere('expires_at', '<=', staleAt)
      .update({ last_activity_at: now, expires_at: expiresAt })
      .returning('*');
    return row && toApiSession(row);
  },

  async completeMfa(db: Db, id: string, amr: string[]): Promise<ApiSession | undefined> {
    const [row] = await db('api_sessions')
      .where({ id })
      .update({ mfa_complete: true, amr: JSON.stringify(amr) })
      .returning('*');
    return row && toApiSession(row);
  },

  /** Per identity with a live API session, the latest expiry among its sessions. */
  async activeUntilAmong(db: Db, identityIds: string[], now: Date): Promise<Map<string, Date>> {
    if (identityIds.length === 0) return new Map();
    const rows: { identity_id: string; until: Date | string }[] = await db('api_sessions')
      .whereIn('identity_id', identityIds)
      .andWhere('expires_at', '>', now)
      .groupBy('identity_id')
      .select('identity_id')
      .max({ until: 'expires_at' });
    return new Map(rows.map((r) => [r.identity_id, new Date(r.until)]));
  },

  async delete(db: Db, id: string): Promise<ApiSession | undefined> {
    const [row] = await db('api_sessions').where({ id }).delete().returning('*');
    return row && toApiSession(row);
  },

  /** Every session of an identity, live or expired but not yet removed, oldest first. */
  async findForIdentity(db: Db, identityId: string): Promise<ApiSession[]> {
    const rows = await db<ApiSessionRow>('api_sessions')
      .where({ identity_id: identityId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }]);
    return rows.map(toApiSession);
  },

  /** Deletes every session of the identity; returns what each was. */
  async deleteForIdentity(db: Db, identityId: string): Promise<Pick<ApiSession, 'id' | 'kind'>[]> {
    return db('api_sessions').where({ identity_id: identityId }).delete().returning(['id', 'kind']);
  },

  /** Every session, legacy and OIDC, so that none a backup brought back goes on: how many of them had not expired. */
  async deleteAll(db: Db): Promise<number> {
    const { rows } = await db.raw(
      `WITH deleted AS (DELETE FROM api_sessions RETURNING expires_at)
       SELECT count(*)::int AS n FROM deleted WHERE expires_at > now()`,
    );
    return (rows[0] as { n: number }).n;
  },

  /** Expired sessions, at most `limit` per call. */
  async deleteExpired(db: Db, now: Date, limit = 1000): Promise<number> {
    const { rows } = await db.raw(
      'DELETE FROM api_sessions WHERE id IN (SELECT id FROM api_sessions WHERE expires_at < ? LIMIT ?) RETURNING id',
      [now, limit],
    );
    return rows.length;
  },
};
