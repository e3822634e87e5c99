import type { Knex } from 'knex';
import { inTransaction, RETRY_DEADLOCKS, type AfterCommit } from '../db/transaction.js';
import type { Db } from '../db/create-database.js';
import {
  apiSessionsRepository,
  type ApiSession,
  type NewApiSession,
} from '../repositories/api-sessions-repository.js';
import { oidcPayloadsRepository } from '../repositories/oidc-payloads-repository.js';
import { NO_AUDIT, recordSessionEnded, type AuditTrail } from '../services/audit-trail.js';
import { loginRowsEnd } from './login-lifetime.js';
import type { LoginState } from './login-state.js';
import type { RevocationService, RevokeOptions } from '../services/revocation-service.js';

/**
 * What a finished login tells every token of its grant (docs/adr/0002-oidc-login-state.md): kept
 * beside oidc-provider's rows, keyed by grant id, with the API session id in the `uid` column.
 */
export interface LoginFacts {
  /** The identity id (`sub`); named like the provider's field so identity clean-up finds it. */
  accountId: string;
  apiSessionId: string;
  amr: string[];
  configTypes: string[];
  isCertExtendable: boolean;
  isAdmin: boolean;
  /** The identity's token generation at login: a later revocation bumps it (ADR 0006). */
  tokenGeneration: number;
  /** Epoch seconds of the primary authentication. */
  authTime: number;
  /**
   * The issuer the login went through: its codes and refresh tokens are redeemed there only.
   * Absent from logins stored before it was kept (they are redeemed at any issuer).
   */
  issuer?: string;
  /**
   * `x5t#S256` of the client certificate the grant's tokens are bound to (RFC 8705 §3): its code
   * is exchanged and its refresh tokens redeemed only over a connection presenting it, and its
   * access tokens carry it as `cnf`. Absent: unbound (other login methods, policies that do not
   * bind, logins stored before binding existed).
   */
  boundCertX5tS256?: string;
}

/** RFC 8705 §3.1: the `cnf` claim of a grant's tokens; undefined for an unbound grant. */
export function confirmationOf(facts: LoginFacts): { 'x5t#S256': string } | undefined {
  return facts.boundCertX5tS256 === undefined ? undefined : { 'x5t#S256': facts.boundCertX5tS256 };
}

const MODEL = 'SvcLogin';

/** Where a login came from, kept on its API session only (docs/operations.md "Seeing who is signed in"). */
export interface SessionOrigin {
  /** The primary login method: `password`, `cert`, `ext-jwt`. */
  authMethod: string | null;
  /** The client address of the request that completed the login, as the request log writes it. */
  ipAddress: string | null;
}

export interface OidcSessionsDeps {
  knex: Knex;
  revocations: RevocationService;
  audit?: AuditTrail;
  now?: () => Date;
}

/**
 * The API sessions (kind `oidc`) behind OIDC grants: started with the grant, ended with it. These
 * are our API sessions (`api_sessions`, `z_asid`), not oidc-provider's `Session` model.
 */
export function createOidcSessions({
  knex,
  revocations,
  audit = NO_AUDIT,
  now = () => new Date(),
}: OidcSessionsDeps) {
  async function endGrantIn(
    trx: Db,
    grantId: string,
    apiSessionId: string | undefined,
    options: RevokeOptions,
  ): Promise<void> {
    // The grant's rows before its API session: a token request updates them in that order in one
    // statement (login-rows-repository.ts), and the opposite order here deadlocks with it when a
    // replayed code ends the grant while the winner is issuing.
    await oidcPayloadsRepository.deleteByGrantId(trx, grantId);
    if (apiSessionId) await revocations.revokeApiSession(trx, apiSessionId, options);
  }

  /**
   * The rows of the grant behind an API session: its login facts, codes and refresh tokens (by
   * grant id) and the provider's Grant. Nothing for a session without a grant (a legacy one).
   */
  async function endGrantRowsOf(trx: Db, apiSessionId: string): Promise<void> {
    const stored = await oidcPayloadsRepository.findByUid(trx, MODEL, apiSessionId, now());
    const grantId = stored ? grantIdOf(stored) : undefined;
    if (!grantId) return;
    await oidcPayloadsRepository.deleteByGrantId(trx, grantId);
    await oidcPayloadsRepository.destroy(trx, 'Grant', grantId);
  }

  /** The API session row of a login (id = z_asid): complete, the login owes nothing more. */
  const sessionRow = (
    facts: LoginFacts,
    origin: SessionOrigin,
    expiresAt: Date,
    createdAt?: Date,
  ): NewApiSession => ({
    id: facts.apiSessionId,
    identityId: facts.accountId,
    kind: 'oidc',
    tokenHash: null,
    amr: facts.amr,
    configTypes: facts.configTypes,
    isCertExtendable: facts.isCertExtendable,
    mfaRequired: false,
    mfaComplete: facts.amr.includes('mfa'),
    authMethod: origin.authMethod,
    ipAddress: origin.ipAddress,
    expiresAt,
    ...(createdAt ? { createdAt } : {}),
  });

  /**
   * A session that ends in the caller's transaction, with its grant's rows when it has one;
   * answers its row when it was still there.
   */
  async function endApiSessionIn(
    trx: Db,
    apiSessionId: string,
    options: RevokeOptions,
  ): Promise<ApiSession | undefined> {
    await endGrantRowsOf(trx, apiSessionId);
    return revocations.revokeApiSession(trx, apiSessionId, options);
  }

  return {
    /**
     * The API session row (id = z_asid) and the facts of the grant, written together or not at
     * all, in one statement (`insertWithLoginFacts`). A deleted identity fails it on the session's
     * foreign key. Both end with the login's code until a token is issued (login-lifetime.ts).
     * `openedUntil`: the session row was written already, under a session limit (`open`), and
     * ends then; only the facts are written, with the same end.
     */
    async start(
      grantId: string,
      facts: LoginFacts,
      origin: SessionOrigin,
      openedUntil?: Date,
    ): Promise<void> {
      const expiresAt = openedUntil ?? loginRowsEnd(now(), { kind: 'login' });
      const factsRow = {
        model: MODEL,
        id: grantId,
        payload: { ...factsOnly(facts), grantId },
        grantId,
        uid: facts.apiSessionId,
        expiresAt,
      };
      if (openedUntil) return oidcPayloadsRepository.upsert(knex, factsRow);
      // The login's audit events (held by this request) are part of the same statement.
      const held = audit.takeHeld();
      await apiSessionsRepository.insertWithLoginFacts(
        knex,
        sessionRow(facts, origin, expiresAt),
        factsRow,
        held.rows,
      );
      held.logged();
    },

    /**
     * The API session of a login whose policy limits sessions, written in the session limit's
     * transaction, before the grant exists (the grant's facts follow in `start`); answers its end.
     */
    async open(trx: Db, afterCommit: AfterCommit, facts: LoginFacts, origin: SessionOrigin): Promise<Date> {
      const at = now();
      const expiresAt = loginRowsEnd(at, { kind: 'login' });
      // The login's audit events (held by this request) are part of the same statement.
      const held = audit.takeHeld();
      await apiSessionsRepository.insertFixed(trx, sessionRow(facts, origin, expiresAt, at), held.rows);
      afterCommit(held.logged);
      return expiresAt;
    },

    /** The facts of a grant whose API session still exists; undefined once it has ended. */
    async factsOf(grantId: string): Promise<LoginFacts | undefined> {
      // The facts row's `uid` is its API session id (see `start`): one joined read.
      const stored = await oidcPayloadsRepository.findWithSession(knex, MODEL, grantId, now());
      return stored && liveFacts(stored.payload, stored.sessionExpiresAt, now());
    },

    /** The provider destroyed a grant (replay, revocation): its API session ends too. */
    async endGrant(grantId: string): Promise<void> {
      const stored = await oidcPayloadsRepository.find(knex, MODEL, grantId, now());
      const apiSessionId = (stored?.payload as { apiSessionId?: string } | undefined)?.apiSessionId;
      await inTransaction(
        knex,
        async (trx, afterCommit) => {
          await endGrantIn(trx, grantId, apiSessionId, { afterCommit, cause: 'grant-ended' });
          afterCommit(revocations.afterCommit);
        },
        RETRY_DEADLOCKS,
      );
    },

    /**
     * The API session of an OIDC login ends, and with it its grant's tokens: its owner's logout
     * (end_session with its ID token, `DELETE current-api-session` with its access token), or the
     * RFC 7009 revocation of one of its access tokens (`revoked`).
     */
    async endApiSession(apiSessionId: string, cause: 'logout' | 'revoked' = 'logout'): Promise<void> {
      await inTransaction(
        knex,
        async (trx, afterCommit) => {
          const ended = await endApiSessionIn(trx, apiSessionId, {
            afterCommit,
            cause: cause === 'logout' ? 'session-ended' : cause,
          });
          afterCommit(revocations.afterCommit);
          // Already gone (ended elsewhere, or twice): its ending was recorded then.
          if (!ended) return;
          await recordSessionEnded(audit, trx, afterCommit, ended, cause);
        },
        RETRY_DEADLOCKS,
      );
    },

    endGrantRowsOf,
    endApiSessionIn,

    /**
     * In the caller's transaction, ends the identity's OIDC sessions whose tokens are bound to a
     * certificate whose thumbprint is not in `enrolled` (its cert authenticators left after one
     * was deleted), each with its grant and a `session.ended` audit event of `cause`. A login
     * bound to a re-encoded copy of a certificate has a thumbprint no authenticator keeps: it ends
     * too, so the copy of a deleted certificate cannot keep its tokens. An unfinished login whose
     * certificate step presented such a certificate (it still owes a second factor) goes as well,
     * so it cannot finish into tokens bound to it.
     */
    async endSessionsBoundOutside(
      trx: Db,
      afterCommit: AfterCommit,
      identityId: string,
      enrolled: ReadonlySet<string>,
      cause: string,
    ): Promise<void> {
      const logins = await oidcPayloadsRepository.listForAccount(trx, MODEL, identityId, now());
      for (const { payload } of logins) {
        const facts = payload as Partial<LoginFacts>;
        const bound = facts.boundCertX5tS256;
        if (typeof bound !== 'string' || enrolled.has(bound) || typeof facts.apiSessionId !== 'string')
          continue;
        const ended = await endApiSessionIn(trx, facts.apiSessionId, { afterCommit, cause });
        if (ended) await recordSessionEnded(audit, trx, afterCommit, ended, cause);
      }
      await oidcPayloadsRepository.deleteForAccountWhere(trx, 'Interaction', identityId, now(), (payload) => {
        const state = (payload.result as { svc?: Partial<LoginState> } | undefined)?.svc;
        const presented = state?.presentedCertX5tS256;
        return typeof presented === 'string' && !enrolled.has(presented);
      });
    },

    /** Identity revocation hook: its grants, tokens, sessions and unfinished logins go. */
    async forgetIdentity(trx: Db, identityId: string): Promise<void> {
      await oidcPayloadsRepository.deleteForAccount(trx, identityId);
    },
  };
}

/** A grant's facts count only while their API session exists and has not expired. */
export function liveFacts(
  payload: Record<string, unknown> | undefined,
  sessionExpiresAt: Date | null,
  now: Date,
): LoginFacts | undefined {
  return payload && sessionExpiresAt && sessionExpiresAt > now
    ? (payload as unknown as LoginFacts)
    : undefined;
}

const factsOnly = (f: LoginFacts): LoginFacts => ({
  accountId: f.accountId,
  apiSessionId: f.apiSessionId,
  amr: f.amr,
  configTypes: f.configTypes,
  isCertExtendable: f.isCertExtendable,
  isAdmin: f.isAdmin,
  tokenGeneration: f.tokenGeneration,
  authTime: f.authTime,
  ...(f.issuer !== undefined ? { issuer: f.issuer } : {}),
  ...(f.boundCertX5tS256 !== undefined ? { boundCertX5tS256: f.boundCertX5tS256 } : {}),
});

function grantIdOf(stored: { payload: Record<string, unknown> }): string | undefined {
  const id = stored.payload.grantId;
  return typeof id === 'string' ? id : undefined;
}

export type OidcSessions = ReturnType<typeof createOidcSessions>;
