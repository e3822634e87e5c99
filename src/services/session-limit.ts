import type { Knex } from 'knex';
import type { Db } from '../db/create-database.js';
import { inTransaction, RETRY_DEADLOCKS, type AfterCommit } from '../db/transaction.js';
import { AppError } from '../errors/app-error.js';
import {
  apiSessionsRepository,
  type ApiSession,
  type ApiSessionKind,
} from '../repositories/api-sessions-repository.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import { NO_AUDIT, recordSessionEnded, type AuditTrail } from './audit-trail.js';
import type { RevocationService, RevokeOptions } from './revocation-service.js';

/** Ends an OIDC API session and its grant in the caller's transaction (the OIDC part provides it). */
export type OidcSessionEnder = (
  trx: Db,
  apiSessionId: string,
  options: RevokeOptions,
) => Promise<ApiSession | undefined>;

export interface SessionLimitDeps {
  knex: Knex;
  revocations: Pick<RevocationService, 'revokeApiSession'>;
  audit?: AuditTrail;
  now?: () => Date;
}

export const sessionLimitReached = () => new AppError('SESSION_LIMIT_REACHED');

/**
 * The concurrent-session limit of auth policies (`sessions.max`, `sessions.onLimit`), checked
 * where a session becomes fully authenticated: a login that owes nothing more, or the completion
 * of its MFA step. What counts is every live API session of the identity, legacy or OIDC, whose
 * second factor is not still owed (docs/operations.md, "Session limit").
 *
 * Exact under concurrency, across processes: the check, the evictions and the write that adds the
 * session (`work`) run in one transaction under a per-identity advisory lock, and the sessions are
 * counted by a statement sent after the lock was granted, so under READ COMMITTED it sees every
 * session the previous holder committed. Two logins of one identity therefore check one after the
 * other, each seeing the other's session.
 */
export function createSessionLimit({
  knex,
  revocations,
  audit = NO_AUDIT,
  now = () => new Date(),
}: SessionLimitDeps) {
  // Until the OIDC part registers its own, an OIDC session ends like any other (no grant to end).
  let endOidcSession: OidcSessionEnder = (trx, id, options) => revocations.revokeApiSession(trx, id, options);

  async function evict(
    trx: Db,
    afterCommit: AfterCommit,
    identityId: string,
    session: { id: string; kind: ApiSessionKind },
  ): Promise<void> {
    const options = { afterCommit, cause: 'limit' };
    const ended =
      session.kind === 'oidc'
        ? await endOidcSession(trx, session.id, options)
        : await revocations.revokeApiSession(trx, session.id, options);
    // Gone meanwhile: whatever ended it first recorded the ending.
    if (!ended) return;
    await recordSessionEnded(audit, trx, afterCommit, ended, 'limit');
  }

  return {
    /**
     * Runs `work` (which makes one more session of the identity fully authenticated) in a
     * transaction, once the identity's policy allows it: over the limit, `evictOldest` first ends
     * the sessions with the oldest `createdAt` as a logout would, `refuse` throws 403
     * SESSION_LIMIT_REACHED and nothing is written. `excluding`: the session `work` completes,
     * which must not count against itself. A deleted identity: 401 INVALID_AUTH.
     */
    async admit<T>(
      identityId: string,
      work: (trx: Knex.Transaction, afterCommit: AfterCommit) => Promise<T>,
      options: { excluding?: string } = {},
    ): Promise<T> {
      return inTransaction(
        knex,
        async (trx, afterCommit) => {
          const deleted = () => new AppError('INVALID_AUTH', { detail: 'identity deleted during the login' });
          const limit = await identitiesRepository.lockSessions(trx, identityId);
          if (!limit) throw deleted();
          if (limit.max > 0) {
            // The lock statement read the identity before its lock was granted; the count holds it
            // against deletion from here on, or finds it deleted meanwhile.
            const counted = await apiSessionsRepository.countedFor(trx, identityId, now(), options.excluding);
            if (!counted) throw deleted();
            const over = counted.length - limit.max + 1;
            if (over > 0) {
              if (limit.onLimit === 'refuse') throw sessionLimitReached();
              for (const session of counted.slice(0, over))
                await evict(trx, afterCommit, identityId, session);
            }
          }
          return work(trx, afterCommit);
        },
        RETRY_DEADLOCKS,
      );
    },

    /** The OIDC part ends an evicted OIDC session together with its grant's tokens. */
    endOidcSessionsWith(ender: OidcSessionEnder): void {
      endOidcSession = ender;
    },
  };
}

export type SessionLimitService = ReturnType<typeof createSessionLimit>;
