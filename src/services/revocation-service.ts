import type { Db } from '../db/create-database.js';
import type { AfterCommit } from '../db/transaction.js';
import { apiSessionsRepository, type ApiSession } from '../repositories/api-sessions-repository.js';
import { identitiesRepository, type IdentityChanges } from '../repositories/identities-repository.js';
import { revocationsRepository } from '../repositories/revocations-repository.js';
import { changeTransaction, NO_AUDIT, recordSessionEnded, type AuditTrail } from './audit-trail.js';

// A facts event only has to outlive the identity facts cache (services/identity-context.ts, 300 s):
// an instance that misses it for longer has reloaded the facts anyway.
const FACTS_RETENTION_SECONDS = 900;

/** Extra clean-up run in the same transaction, e.g. the OIDC grants of an identity. */
export type IdentityRevocationHook = (trx: Db, identityId: string) => Promise<void>;

export interface RevocationServiceDeps {
  /** How long a revocation must be remembered: the longest lifetime of any token it covers (s). */
  retentionSeconds: () => number;
  hooks?: IdentityRevocationHook[];
  /**
   * Called after commit: this process reads the new events at once (the other instances learn of
   * them by the NOTIFY the insert sends, or by their one-second catch-up read).
   */
  published?: () => Promise<void>;
  audit?: AuditTrail;
  now?: () => Date;
}

/** How a revocation is published: the caller's transaction hooks, and why (for the audit trail). */
export interface RevokeOptions {
  /** The transaction's `afterCommit`: this process applies the revocation and audits it after commit. */
  afterCommit?: AfterCommit;
  /** Why access ends, e.g. `disabled`, `lockout`, `policy-changed` (the audit event's `cause`). */
  cause?: string;
}

/**
 * Ends every current form of access of an identity: its API sessions
 * go, its token generation moves on (so JWTs issued so far are refused) and a revocation event is
 * recorded for the other instances. Run inside the caller's transaction.
 */
export function createRevocationService(deps: RevocationServiceDeps) {
  const now = deps.now ?? (() => new Date());
  const hooks = deps.hooks ?? [];
  const audit = deps.audit ?? NO_AUDIT;
  const expiry = () => new Date(now().getTime() + deps.retentionSeconds() * 1000);

  /**
   * A change of what tokens show of the identity (its name) or of its detail that ends no access:
   * every instance drops its cached facts, and no token is refused.
   */
  async function recordIdentityChanged(trx: Db, identityId: string): Promise<void> {
    await revocationsRepository.insert(trx, {
      kind: 'identity_facts',
      subject: identityId,
      generation: null,
      expiresAt: new Date(now().getTime() + FACTS_RETENTION_SECONDS * 1000),
    });
  }

  /** Resolves once this process enforces what was just committed (the caller's next request sees it). */
  async function afterCommit(): Promise<void> {
    await deps.published?.();
  }

  /**
   * Stores the `revocation.published` event with the revocation, and registers this process's
   * refresh after commit.
   */
  async function published(
    trx: Db,
    options: RevokeOptions,
    event: { kind: string; identityId?: string; sessionId?: string },
  ) {
    if (!options.afterCommit) return;
    // Logged before this process's own read of the feed records it as received.
    await audit.store(changeTransaction(trx), options.afterCommit, {
      event: 'revocation.published',
      ...event,
      ...(options.cause !== undefined && { cause: options.cause }),
    });
    options.afterCommit(afterCommit);
  }

  /** One `session.ended` per session an identity's revocation ended, with the revocation's cause. */
  async function sessionsEnded(
    trx: Db,
    options: RevokeOptions,
    identityId: string,
    sessions: Pick<ApiSession, 'id' | 'kind'>[],
  ): Promise<void> {
    if (!options.afterCommit) return;
    for (const s of sessions)
      await recordSessionEnded(audit, trx, options.afterCommit, { ...s, identityId }, options.cause);
  }

  return {
    hooks,

    async revokeIdentity(
      trx: Db,
      identityId: string,
      options: RevokeOptions & { changes?: IdentityChanges } = {},
    ): Promise<void> {
      const changes = options.changes ?? {};
      // The OIDC rows (the hooks) before the API sessions, in the order a token request updates
      // them in one statement: the opposite order can deadlock with a code exchange in flight.
      for (const hook of hooks) await hook(trx, identityId);
      const sessions = await apiSessionsRepository.deleteForIdentity(trx, identityId);
      const identity = await identitiesRepository.update(trx, identityId, changes, true);
      await revocationsRepository.insert(trx, {
        kind: 'identity',
        subject: identityId,
        generation: identity?.tokenGeneration ?? null,
        expiresAt: expiry(),
      });
      await published(trx, options, { kind: 'identity', identityId });
      await sessionsEnded(trx, options, identityId, sessions);
    },

    /**
     * A deleted identity: its row is gone, so only the event remains (generation: refuse all).
     * `sessions`: the API sessions its row took with it, for the audit trail.
     */
    async recordIdentityDeleted(
      trx: Db,
      identityId: string,
      options: RevokeOptions & { sessions?: Pick<ApiSession, 'id' | 'kind'>[] } = {},
    ): Promise<void> {
      for (const hook of hooks) await hook(trx, identityId);
      await revocationsRepository.insert(trx, {
        kind: 'identity',
        subject: identityId,
        generation: null,
        expiresAt: expiry(),
      });
      await published(trx, { cause: 'deleted', ...options }, { kind: 'identity', identityId });
      await sessionsEnded(trx, { cause: 'deleted', ...options }, identityId, options.sessions ?? []);
    },

    recordIdentityChanged,

    /**
     * A write to what the identity's detail shows (role attributes, authenticators, enrollments,
     * TOTP): recorded in the transaction; this process applies it after commit, the others by the feed.
     */
    async identityChanged(trx: Db, onCommit: AfterCommit, identityId: string): Promise<void> {
      await recordIdentityChanged(trx, identityId);
      onCommit(afterCommit);
    },

    /** Ends an API session; returns its row when it was still there. */
    async revokeApiSession(
      trx: Db,
      sessionId: string,
      options: RevokeOptions = {},
    ): Promise<ApiSession | undefined> {
      const ended = await apiSessionsRepository.delete(trx, sessionId);
      await revocationsRepository.insert(trx, {
        kind: 'api_session',
        subject: sessionId,
        generation: null,
        expiresAt: expiry(),
      });
      await published(trx, options, { kind: 'api-session', sessionId });
      return ended;
    },

    afterCommit,
  };
}

export type RevocationService = ReturnType<typeof createRevocationService>;
export type IdentityChangeFeed = Pick<RevocationService, 'identityChanged'>;
