import type { Knex } from 'knex';
import { mapPage, type ListQuery } from '../db/list-query.js';
import { inTransaction } from '../db/transaction.js';
import { AppError } from '../errors/app-error.js';
import { authenticatorsRepository, type Authenticator } from '../repositories/authenticators-repository.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import { NO_AUDIT, type AuditTrail } from './audit-trail.js';
import { blockCertificatesOf } from './certificate-blocks.js';
import type { AuthenticatorView } from '../schemas/enrollment-views.js';
import type { IdentityChangeFeed } from './revocation-service.js';

/** What the management API shows of an authenticator: never the password hash. */
export function authenticatorView(a: Authenticator): AuthenticatorView {
  return {
    id: a.id,
    identityId: a.identityId,
    method: a.method,
    ...(a.method === 'updb' ? { username: a.username } : {}),
    ...(a.method === 'cert'
      ? { fingerprint: a.certFingerprint, certPem: a.certPem, caId: a.caId, isExtendable: a.isExtendable }
      : {}),
    createdAt: a.createdAt.toISOString(),
    updatedAt: a.updatedAt.toISOString(),
  };
}

/** `/authenticators`: list, detail, delete. */
export function createAuthenticatorService({
  knex,
  changes,
  audit = NO_AUDIT,
}: {
  knex: Knex;
  changes: IdentityChangeFeed;
  audit?: AuditTrail;
}) {
  return {
    async list(q: ListQuery) {
      return mapPage(await authenticatorsRepository.list(knex, q), (items) => items.map(authenticatorView));
    },

    async get(id: string) {
      const authenticator = await authenticatorsRepository.findById(knex, id);
      if (!authenticator) throw new AppError('NOT_FOUND');
      return authenticatorView(authenticator);
    },

    async delete(id: string): Promise<void> {
      await inTransaction(knex, async (trx, afterCommit) => {
        const deleted = await authenticatorsRepository.delete(trx, id);
        if (!deleted) throw new AppError('NOT_FOUND');
        // Without the block the same device could auto-enroll as a new identity at once.
        const identity = await identitiesRepository.findById(trx, deleted.identityId);
        if (identity) await blockCertificatesOf(trx, afterCommit, identity, [deleted], audit);
        await changes.identityChanged(trx, afterCommit, deleted.identityId);
        audit.recordAfterCommit(afterCommit, {
          event: 'authenticator.deleted',
          authenticatorId: id,
          identityId: deleted.identityId,
          method: deleted.method,
        });
      });
    },
  };
}

export type AuthenticatorService = ReturnType<typeof createAuthenticatorService>;
