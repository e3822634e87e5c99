import type { Db } from '../db/create-database.js';
import { hashTokenId } from '../crypto/token-id-hash.js';
import { fixedStatement, runFixed } from '../db/fixed-statement.js';
import { auditRowsCte, auditRowsJson, type AuditEventInsert } from './audit-events-repository.js';
import { oidcPayloadsRepository, type OidcPayloadRow } from './oidc-payloads-repository.js';

/*
 * The rows a login keeps besides its codes and tokens: the provider's Grant and our SvcLogin facts
 * (both keyed by the grant id's hash; the facts keep their API session id in `uid`), and that API
 * session. Their end only ever moves later (GREATEST), so writes in any order agree. A row that
 * already ends at or after the new end is left untouched: a refresh's access token ends long
 * before its refresh chain, and rewriting a row costs PostgreSQL a new row version and an entry in
 * each of its indexes for nothing. The API session follows its facts row: both are written with
 * the same end (insertWithLoginFacts) and only ever moved together here, so when the facts need no
 * move, neither does the session.
 */
const loginRowsUpdate = (grantIds: string) =>
  `UPDATE oidc_payloads SET expires_at = GREATEST(expires_at, ?)
    WHERE model IN ('Grant', 'SvcLogin') AND id IN (${grantIds})
      AND (expires_at IS NULL OR expires_at < ?)
   RETURNING uid`;
const API_SESSION_UPDATE = `UPDATE api_sessions SET expires_at = GREATEST(expires_at, ?)
    WHERE id IN (SELECT uid FROM login_rows)`;

/*
 * The audit events a token request decided before it consumes (the secondary external JWT of a
 * refresh, oidc/refresh-second-factor.ts) are stored by the consume, and only when it consumed.
 */
const CONSUME = fixedStatement(`WITH consumed AS (
  UPDATE oidc_payloads SET consumed_at = ?
   WHERE model = ? AND id = ? AND consumed_at IS NULL
  RETURNING grant_id
), login_rows AS (${loginRowsUpdate('SELECT grant_id FROM consumed')}
), api_session AS (${API_SESSION_UPDATE}
), ${auditRowsCte('EXISTS (SELECT 1 FROM consumed)')}
SELECT count(*)::int AS n FROM consumed`);

const EXTEND_THEN_UPSERT = oidcPayloadsRepository.upsertAfter(
  `with "login_rows" as (${loginRowsUpdate('?')}), "api_session" as (${API_SESSION_UPDATE}) `,
);

/** An auth request's progress (a login that still owes a factor) with the audit events of its step. */
const UPSERT_WITH_EVENTS = oidcPayloadsRepository.upsertAfter(`with ${auditRowsCte()} `);

/**
 * Writes that move the end of a login's rows (src/oidc/login-lifetime.ts) inside a statement the
 * token request sends anyway, so a code exchange or a refresh costs no extra round trip.
 */
export const loginRowsRepository = {
  /**
   * Marks a code or refresh token consumed in ONE conditional statement, which also moves its
   * login's rows to end no earlier than `loginEnd`; false when it was gone or already consumed
   * (then nothing moves).
   */
  async consumeAndExtend(
    db: Db,
    model: string,
    id: string,
    at: Date,
    loginEnd: Date,
    events: readonly AuditEventInsert[] = [],
  ): Promise<boolean> {
    const [row] = await runFixed<{ n: number }>(db, CONSUME, [
      at,
      model,
      hashTokenId(id),
      loginEnd,
      loginEnd,
      loginEnd,
      auditRowsJson(events),
    ]);
    return Number(row!.n) > 0;
  },

  /** Stores a row (an auth request's progress) and, in the same statement, the audit events of the step that made it. */
  async upsertWithEvents(db: Db, row: OidcPayloadRow, events: readonly AuditEventInsert[]): Promise<void> {
    await oidcPayloadsRepository.upsertWith(db, UPSERT_WITH_EVENTS, [auditRowsJson(events)], row);
  },

  /** Stores a refresh token and, in the same statement, moves its login's rows to end no earlier than `loginEnd`. */
  async upsertAndExtend(db: Db, row: OidcPayloadRow & { grantId: string }, loginEnd: Date): Promise<void> {
    await oidcPayloadsRepository.upsertWith(
      db,
      EXTEND_THEN_UPSERT,
      [loginEnd, hashTokenId(row.grantId), loginEnd, loginEnd],
      row,
    );
  },
};
