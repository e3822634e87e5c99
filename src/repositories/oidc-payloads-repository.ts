import type { Db } from '../db/create-database.js';
import { hashTokenId } from '../crypto/token-id-hash.js';
import { fixedStatement, runFixed, type FixedStatement } from '../db/fixed-statement.js';

/** One stored oidc-provider model instance (or one of our own rows kept beside them). */
export interface OidcPayloadRow {
  model: string;
  id: string;
  payload: Record<string, unknown>;
  grantId?: string | null;
  userCode?: string | null;
  uid?: string | null;
  expiresAt?: Date | null;
}

export interface StoredOidcPayload {
  payload: Record<string, unknown>;
  consumedAt: Date | null;
}

interface Row {
  payload: Record<string, unknown> | string;
  consumed_at: Date | null;
}

const toStored = (r: Row): StoredOidcPayload => ({
  payload: typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload,
  consumedAt: r.consumed_at,
});

/**
 * The identity a row belongs to: the provider's `accountId` (grants, sessions, codes, refresh
 * tokens, our login facts) or, for an unfinished login, the identity its result names.
 */
function accountIdOf(payload: Record<string, unknown>): string | null {
  const result = payload.result as
    { login?: { accountId?: unknown }; svc?: { identityId?: unknown } } | undefined;
  const id = payload.accountId ?? result?.login?.accountId ?? result?.svc?.identityId;
  return typeof id === 'string' ? id : null;
}

/** Rows that have not expired at `now` (the library re-checks `exp` itself). */
const live = (db: Db, model: string, now: Date) =>
  db('oidc_payloads')
    .where({ model })
    .andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', now));

/** Null stays null: most rows have no grant. */
const hashedOrNull = (id: string | null | undefined) => (id ? hashTokenId(id) : null);

/* The statements every login and refresh sends, as fixed text (src/db/fixed-statement.ts). */
const UPSERT_SQL = `insert into "oidc_payloads" ("account_id", "expires_at", "grant_id", "id", "model", "payload", "uid", "user_code") values (?, ?, ?, ?, ?, ?, ?, ?) on conflict ("model", "id") do update set "payload" = excluded."payload", "grant_id" = excluded."grant_id", "user_code" = excluded."user_code", "uid" = excluded."uid", "expires_at" = excluded."expires_at", "account_id" = excluded."account_id"`;
const UPSERT = fixedStatement(UPSERT_SQL);
const FIND = fixedStatement(
  `select "payload", "consumed_at" from "oidc_payloads" where "model" = ? and ("expires_at" is null or "expires_at" > ?) and "id" = ? limit 1`,
);
/**
 * Newest row wins: parallel logins may have produced duplicate uids
 * (https://github.com/panva/node-oidc-provider/issues/1145).
 */
const FIND_BY_UID = fixedStatement(
  `select "payload", "consumed_at" from "oidc_payloads" where "model" = ? and ("expires_at" is null or "expires_at" > ?) and "uid" = ? order by "expires_at" desc limit 1`,
);
const CONSUME = fixedStatement(
  `update "oidc_payloads" set "consumed_at" = ? where "model" = ? and "id" = ? and "consumed_at" is null returning 1`,
);
const FIND_WITH_SESSION = fixedStatement(
  `select "oidc_payloads"."payload", "oidc_payloads"."consumed_at", "api_sessions"."expires_at" as "session_expires_at" from "oidc_payloads" left join "api_sessions" on "api_sessions"."id" = "oidc_payloads"."uid" where "oidc_payloads"."model" = ? and "oidc_payloads"."id" = ? and ("oidc_payloads"."expires_at" is null or "oidc_payloads"."expires_at" > ?) limit 1`,
);
const DESTROY = fixedStatement(`delete from "oidc_payloads" where "model" = ? and "id" = ?`);

/** The upsert's values, in UPSERT_SQL's order. */
const upsertBindings = (row: OidcPayloadRow) => [
  accountIdOf(row.payload),
  row.expiresAt ?? null,
  hashedOrNull(row.grantId),
  hashTokenId(row.id),
  row.model,
  JSON.stringify(row.payload),
  row.uid ?? null,
  row.userCode ?? null,
];

/**
 * The one table of oidc-provider's models (migrations/003_oidc.ts).
 * Ids are bearer secrets (codes, refresh tokens, session cookies, interaction ids), so `id` and
 * `grant_id` are stored as their SHA-256 and every function here takes the raw value and hashes
 * it (docs/adr/0004-hashed-token-ids.md): no caller can look a row up by the wrong form.
 */
export const oidcPayloadsRepository = {
  async upsert(db: Db, row: OidcPayloadRow): Promise<void> {
    await runFixed(db, UPSERT, upsertBindings(row));
  },

  /**
   * The upsert behind `WITH` clauses another repository adds (`withSql`, ending in a space): more
   * writes in the same statement. Built once, when the other repository's module loads.
   */
  upsertAfter(withSql: string): FixedStatement {
    return fixedStatement(withSql + UPSERT_SQL);
  },

  /** Runs a statement of `upsertAfter` with the bindings of its `WITH` clauses, then the row's. */
  async upsertWith(
    db: Db,
    statement: FixedStatement,
    withBindings: unknown[],
    row: OidcPayloadRow,
  ): Promise<void> {
    await runFixed(db, statement, [...withBindings, ...upsertBindings(row)]);
  },

  async find(db: Db, model: string, id: string, now: Date): Promise<StoredOidcPayload | undefined> {
    const [row] = await runFixed<Row>(db, FIND, [model, now, hashTokenId(id)]);
    return row && toStored(row);
  },

  /**
   * A row with the expiry of the API session its `uid` names (our login facts keep their API
   * session id there), in one statement; `sessionExpiresAt` is null once that session is gone.
   */
  async findWithSession(
    db: Db,
    model: string,
    id: string,
    now: Date,
  ): Promise<(StoredOidcPayload & { sessionExpiresAt: Date | null }) | undefined> {
    const [row] = await runFixed<Row & { session_expires_at: Date | null }>(db, FIND_WITH_SESSION, [
      model,
      hashTokenId(id),
      now,
    ]);
    return row && { ...toStored(row), sessionExpiresAt: row.session_expires_at ?? null };
  },

  async findByUid(db: Db, model: string, uid: string, now: Date): Promise<StoredOidcPayload | undefined> {
    const [row] = await runFixed<Row>(db, FIND_BY_UID, [model, now, uid]);
    return row && toStored(row);
  },

  async findByUserCode(
    db: Db,
    model: string,
    userCode: string,
    now: Date,
  ): Promise<StoredOidcPayload | undefined> {
    const row: Row | undefined = await live(db, model, now)
      .andWhere({ user_code: userCode })
      .first('payload', 'consumed_at');
    return row && toStored(row);
  },

  /** Marks a row consumed in ONE conditional statement; false when it was gone or already consumed. */
  async consume(db: Db, model: string, id: string, at: Date): Promise<boolean> {
    return (await runFixed(db, CONSUME, [at, model, hashTokenId(id)])).length > 0;
  },

  async destroy(db: Db, model: string, id: string): Promise<void> {
    await runFixed(db, DESTROY, [model, hashTokenId(id)]);
  },

  async deleteByGrantId(db: Db, grantId: string, model?: string): Promise<void> {
    await db('oidc_payloads')
      .where({ grant_id: hashTokenId(grantId) })
      .modify((q) => {
        if (model !== undefined) q.andWhere({ model });
      })
      .delete();
  },

  /** The live rows of one model that belong to one identity (`account_id`, indexed). */
  async listForAccount(db: Db, model: string, accountId: string, now: Date): Promise<StoredOidcPayload[]> {
    const rows: Row[] = await live(db, model, now)
      .andWhere({ account_id: accountId })
      .select('payload', 'consumed_at');
    return rows.map(toStored);
  },

  /**
   * Deletes the live rows of one model that belong to one identity and whose payload `doomed`
   * picks; the rows' stored ids (hashes) never leave this module.
   */
  async deleteForAccountWhere(
    db: Db,
    model: string,
    accountId: string,
    now: Date,
    doomed: (payload: Record<string, unknown>) => boolean,
  ): Promise<void> {
    const rows: (Row & { id: string })[] = await live(db, model, now)
      .andWhere({ account_id: accountId })
      .select('id', 'payload', 'consumed_at');
    const ids = rows.filter((r) => doomed(toStored(r).payload)).map((r) => r.id);
    if (ids.length > 0) await db('oidc_payloads').where({ model }).whereIn('id', ids).delete();
  },

  /**
   * Everything of one identity: grants, sessions, codes, refresh tokens (payload.accountId) and
   * unfinished logins (interactions whose result names the identity), so they fail at their next step.
   */
  async deleteForAccount(db: Db, accountId: string): Promise<void> {
    await db('oidc_payloads').where({ account_id: accountId }).delete();
  },

  /** Every row of every model, so that no restored grant, token or code is honoured: the live ones (unexpired, unconsumed) counted per model. */
  async deleteAll(db: Db): Promise<Record<string, number>> {
    const { rows } = await db.raw(
      `WITH deleted AS (DELETE FROM oidc_payloads RETURNING model, expires_at, consumed_at)
       SELECT model, count(*)::int AS n FROM deleted
        WHERE (expires_at IS NULL OR expires_at > now()) AND consumed_at IS NULL GROUP BY model`,
    );
    return Object.fromEntries((rows as { model: string; n: number }[]).map((r) => [r.model, r.n]));
  },

  /** Expired rows, at most `limit` per call so the janitor never holds long locks. */
  async deleteExpired(db: Db, before: Date, limit = 500): Promise<number> {
    const { rows } = await db.raw(
      `DELETE FROM oidc_payloads WHERE (model, id) IN (
         SELECT model, id FROM oidc_payloads WHERE expires_at < ? LIMIT ?
       ) RETURNING 1`,
      [before, limit],
    );
    return rows.length;
  },
};
