import type { Db } from '../db/create-database.js';
import { fixedStatement, runFixed } from '../db/fixed-statement.js';
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
  createdAt: r.created_at,
  lastActivityAt: r.last_activity_at,
  expiresAt: r.expires_at,
});

export type NewApiSession = Omit<ApiSession, 'createdAt' | 'lastActivityAt'> & {
  tokenHash: string | null;
  /** Default: the database's clock. */
  createdAt?: Date;
};

const INSERT_SQL = `insert into "api_sessions" ("id", "identity_id", "kind", "token_hash", "amr", "config_types", "is_cert_extendable", "mfa_required", "mfa_complete", "expires_at", "created_at") values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, coalesce(?::timestamptz, now()))`;
/** An OIDC login's API session beside its login facts (insertWithLoginFacts). */
const INSERT_WITH_LOGIN_FACTS = oidcPayloadsRepository.upsertAfter(`with "api_session" as (${INSERT_SQL}) `);
/** An OIDC login's API session alone, when a session limit opens it before its grant exists. */
const INSERT = fixedStatement(INSERT_SQL);

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
  s.expiresAt,
  s.createdAt ?? null,
];

/**
 * The sessions a session limit counts: live and fully authenticated (no second factor still owed),
 * oldest first. `id <> ?` leaves out the session whose MFA step is being completed.
 */
const COUNTED = fixedStatement(
  `select "id", "kind" from "api_sessions" where "identity_id" = ? and "expires_at" > ? and ("mfa_required" = false or "mfa_complete" = true) and "id" <> ? order by "created_at", "id"`,
);

export const apiSessionsRepository = {
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
        expires_at: s.expiresAt,
        ...(s.createdAt ? { created_at: s.createdAt } : {}),
      })
      .returning('*');
    return toApiSession(row);
  },

  /**
   * An OIDC grant's API session and its login facts (a row of `oidc_payloads`), written together or
   * not at all: one statement, the session's insert as a data-modifying WITH, so no transaction is
   * needed around it. A deleted identity fails it on the session's foreign key.
   */
  async insertWithLoginFacts(db: Db, s: NewApiSession, factsRow: OidcPayloadRow): Promise<void> {
    await oidcPayloadsRepository.upsertWith(db, INSERT_WITH_LOGIN_FACTS, insertBindings(s), factsRow);
  },

  /** One session row as a fixed statement (an OIDC login under a session limit). */
  async insertFixed(db: Db, s: NewApiSession): Promise<void> {
    await runFixed(db, INSERT, insertBindings(s));
  },

  /** The identity's live, fully authenticated sessions, oldest first, but `excluding`. */
  async countedFor(
    db: Db,
    identityId: string,
    now: Date,
    excluding = '',
  ): Promise<{ id: string; kind: ApiSessionKind }[]> {
    return runFixed<{ id: string; kind: ApiSessionKind }>(db, COUNTED, [identityId, now, excluding]);
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

  /** Which of these identities have a live API session. */
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

  async deleteForIdentity(db: Db, identityId: string): Promise<string[]> {
    const rows = await db('api_sessions').where({ identity_id: identityId }).delete().returning('id');
    return rows.map((r: { id: string }) => r.id);
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
