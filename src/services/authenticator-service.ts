import { X509Certificate } from 'node:crypto';
import type { Knex } from 'knex';
import { certX5tS256 } from '../crypto/connection-certificate.js';
import type { Db } from '../db/create-database.js';
import { mapPage, type ListQuery } from '../db/list-query.js';
import { inTransaction, RETRY_DEADLOCKS, type AfterCommit } from '../db/transaction.js';
import { AppError } from '../errors/app-error.js';
import {
  authenticatorListRepository,
  toListedPasskey,
  type ListedAuthenticator,
} from '../repositories/authenticator-list-repository.js';
import { authenticatorsRepository, type Authenticator } from '../repositories/authenticators-repository.js';
import { passkeysRepository } from '../repositories/passkeys-repository.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import { changeTransaction, NO_AUDIT, type AuditTrail } from './audit-trail.js';
import { blockCertificatesOf } from './certificate-blocks.js';
import type { AuthenticatorView } from '../schemas/enrollment-views.js';
import type { IdentityChangeFeed } from './revocation-service.js';

/** What the management API shows of an authenticator: never the password hash nor a passkey's key. */
export function authenticatorView(a: ListedAuthenticator): AuthenticatorView {
  if (a.method === 'passkey') {
    return {
      id: a.id,
      identityId: a.identityId,
      method: 'passkey',
      name: a.passkeyName,
      lastUsedAt: a.lastUsedAt?.toISOString() ?? null,
      createdAt: a.createdAt.toISOString(),
      updatedAt: a.updatedAt.toISOString(),
    };
  }
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

/**
 * Ends, in the caller's transaction, an identity's OIDC sessions whose tokens are bound to a
 * certificate outside `enrolled` (`x5t#S256` thumbprints), with `cause` in the audit trail. The
 * OIDC part provides it: the sessions' grants are its rows.
 */
export type BoundSessionEnder = (
  trx: Db,
  afterCommit: AfterCommit,
  identityId: string,
  enrolled: ReadonlySet<string>,
  cause: string,
) => Promise<void>;

/** Why the sessions bound to a deleted certificate end (`session.ended`, `revocation.published`). */
export const CERTIFICATE_DELETED = 'certificate-deleted';

/** The RFC 8705 thumbprints of an identity's cert authenticators. */
function thumbprintsOf(authenticators: Authenticator[]): Set<string> {
  const thumbprints = new Set<string>();
  for (const a of authenticators) {
    if (a.method !== 'cert' || !a.certPem) continue;
    try {
      thumbprints.add(certX5tS256(new X509Certificate(a.certPem).raw));
    } catch {
      // An unreadable PEM binds nothing: a login never presented it.
    }
  }
  return thumbprints;
}

/** `/authenticators`: list, detail, delete; passkeys are listed and deleted here too. */
export function createAuthenticatorService({
  knex,
  changes,
  audit = NO_AUDIT,
}: {
  knex: Knex;
  changes: IdentityChangeFeed;
  audit?: AuditTrail;
}) {
  // Until the OIDC part registers its own there are no OIDC sessions to end.
  let endBoundSessions: BoundSessionEnder = async () => {};

  /** An admin removes a passkey: it goes like any authenticator, audited as `passkey.removed`. */
  async function deletePasskey(trx: Db, afterCommit: AfterCommit, id: string, actorId?: string) {
    const removed = await passkeysRepository.delete(trx, id);
    if (!removed) throw new AppError('NOT_FOUND');
    await changes.identityChanged(trx, afterCommit, removed.identityId);
    await audit.store(changeTransaction(trx), afterCommit, {
      event: 'passkey.removed',
      identityId: removed.identityId,
      passkeyId: id,
      ...(actorId === undefined ? {} : { actorId }),
    });
  }

  return {
    async list(q: ListQuery) {
      return mapPage(await authenticatorListRepository.list(knex, q), (items) =>
        items.map(authenticatorView),
      );
    },

    async get(id: string) {
      const authenticator = await authenticatorsRepository.findById(knex, id);
      if (authenticator) return authenticatorView(authenticator);
      const passkey = await passkeysRepository.findById(knex, id);
      if (!passkey) throw new AppError('NOT_FOUND');
      return authenticatorView(toListedPasskey(passkey));
    },

    /**
     * The authenticator goes. A certificate's also takes the sessions whose tokens are bound to it
     * (RFC 8705 §3): a re-enrolled or stolen device must log in again, and its old tokens are
     * refused on every instance even over a connection presenting the old certificate.
     */
    async delete(id: string, actorId?: string): Promise<void> {
      await inTransaction(
        knex,
        async (trx, afterCommit) => {
          const deleted = await authenticatorsRepository.delete(trx, id);
          if (!deleted) return deletePasskey(trx, afterCommit, id, actorId);
          // Without the block the same device could auto-enroll as a new identity at once.
          const identity = await identitiesRepository.findById(trx, deleted.identityId);
          if (identity) await blockCertificatesOf(trx, afterCommit, identity, [deleted], audit);
          if (identity && deleted.method === 'cert') {
            const left = await authenticatorsRepository.listForIdentity(trx, identity.id);
            await endBoundSessions(trx, afterCommit, identity.id, thumbprintsOf(left), CERTIFICATE_DELETED);
          }
          await changes.identityChanged(trx, afterCommit, deleted.identityId);
          await audit.store(trx, afterCommit, {
            event: 'authenticator.deleted',
            authenticatorId: id,
            identityId: deleted.identityId,
            method: deleted.method,
          });
        },
        // Ending a session may meet a refresh of it in flight (api-session-ending.ts).
        RETRY_DEADLOCKS,
      );
    },

    /** The OIDC part ends the sessions bound to a deleted certificate together with their grants. */
    endBoundSessionsWith(ender: BoundSessionEnder): void {
      endBoundSessions = ender;
    },
  };
}

export type AuthenticatorService = ReturnType<typeof createAuthenticatorService>;
