import type { Knex } from 'knex';
import type { Db } from '../db/create-database.js';
import { inTransaction, RETRY_DEADLOCKS, type AfterCommit } from '../db/transaction.js';
import { AppError } from '../errors/app-error.js';
import { apiSessionsRepository, type ApiSession } from '../repositories/api-sessions-repository.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import { NO_AUDIT, recordSessionEnded, type AuditTrail } from './audit-trail.js';
import type { RevocationService } from './revocation-service.js';

/**
 * Why a session was ended here, as the audit trail and the revocation feed name it: by an admin
 * (management API) or by its own identity (client API).
 */
export type SessionEndingCause = 'admin' | 'self';

/**
 * Deletes, in the caller's transaction, the rows of the OIDC grant behind an API session (its
 * login facts, codes and refresh tokens), so that its refresh token is refused. The OIDC part
 * knows those rows and provides it.
 */
export type GrantRowsEnder = (trx: Db, apiSessionId: string) => Promise<void>;

export interface ApiSessionEndingDeps {
  knex: Knex;
  revocations: Pick<RevocationService, 'revokeApiSession'>;
  endGrantRows: GrantRowsEnder;
  audit?: AuditTrail;
}

/**
 * Ends API sessions on demand, of any kind, as a logout does: the row goes, an `api_session`
 * revocation reaches every instance within a second (access tokens of the session and its legacy
 * token are refused there), and an OIDC session's grant goes with it (its refresh token is
 * refused). Each ended session is audited once, as `session.ended` with its cause.
 */
export function createApiSessionEnding({
  knex,
  revocations,
  endGrantRows,
  audit = NO_AUDIT,
}: ApiSessionEndingDeps) {
  async function endIn(
    trx: Db,
    afterCommit: AfterCommit,
    session: ApiSession,
    cause: SessionEndingCause,
  ): Promise<void> {
    // The grant's rows before the API session, the order a token request's statements mostly take;
    // a refresh in flight may still deadlock with this, and the transaction then runs again
    // (RETRY_DEADLOCKS).
    if (session.kind === 'oidc') await endGrantRows(trx, session.id);
    const ended = await revocations.revokeApiSession(trx, session.id, { afterCommit, cause });
    // Gone meanwhile: whatever ended it first recorded the ending.
    if (!ended) return;
    await recordSessionEnded(audit, trx, afterCommit, session, cause);
  }

  return {
    /** An admin ends any session; 404 for an id no session has. */
    async endSession(sessionId: string): Promise<void> {
      await inTransaction(
        knex,
        async (trx, afterCommit) => {
          const session = await apiSessionsRepository.findById(trx, sessionId);
          if (!session) throw new AppError('NOT_FOUND');
          await endIn(trx, afterCommit, session, 'admin');
        },
        RETRY_DEADLOCKS,
      );
    },

    /**
     * An identity ends one of its own sessions. Another identity's session is answered as an
     * unknown one (404), so that its ids cannot be probed.
     */
    async endOwnSession(identityId: string, sessionId: string): Promise<void> {
      await inTransaction(
        knex,
        async (trx, afterCommit) => {
          const session = await apiSessionsRepository.findById(trx, sessionId);
          if (!session || session.identityId !== identityId) throw new AppError('NOT_FOUND');
          await endIn(trx, afterCommit, session, 'self');
        },
        RETRY_DEADLOCKS,
      );
    },

    /**
     * An admin ends every session of an identity, in one transaction; 404 for an unknown identity.
     * The identity itself is left as it is: it may log in again (disable or delete it to stop that).
     * Returns the ids of the sessions ended.
     */
    async endIdentitySessions(identityId: string): Promise<string[]> {
      return inTransaction(
        knex,
        async (trx, afterCommit) => {
          if (!(await identitiesRepository.findById(trx, identityId))) throw new AppError('NOT_FOUND');
          const sessions = await apiSessionsRepository.findForIdentity(trx, identityId);
          for (const session of sessions) await endIn(trx, afterCommit, session, 'admin');
          return sessions.map((s) => s.id);
        },
        RETRY_DEADLOCKS,
      );
    },
  };
}

export type ApiSessionEnding = ReturnType<typeof createApiSessionEnding>;
