import type { Knex } from 'knex';
import { mapPage, type ListQuery } from '../db/list-query.js';
import type { Db } from '../db/create-database.js';
import { inTransaction } from '../db/transaction.js';
import { AppError, validationError } from '../errors/app-error.js';
import { newId } from '../crypto/random.js';
import { apiSessionsRepository } from '../repositories/api-sessions-repository.js';
import { authenticatorsRepository } from '../repositories/authenticators-repository.js';
import { authPoliciesRepository } from '../repositories/auth-policies-repository.js';
import { mfaTotpRepository } from '../repositories/mfa-totp-repository.js';
import { mfaRecoveryCodesRepository } from '../repositories/mfa-recovery-codes-repository.js';
import { passkeysRepository } from '../repositories/passkeys-repository.js';
import {
  identitiesRepository,
  roleAttributesRepository,
  type Identity,
  type IdentityChanges,
} from '../repositories/identities-repository.js';
import { checkName } from '../schemas/name-rules.js';
import type {
  IdentityCreateInput,
  IdentityPatchInput,
  IdentityReplaceInput,
} from '../schemas/identity-schemas.js';
import { NO_AUDIT, type AuditTrail } from './audit-trail.js';
import { blockCertificatesOf } from './certificate-blocks.js';
import type { EnrollmentService } from './enrollment-service.js';
import type { IdentityContextCache } from './identity-context.js';
import type { IdentityView } from './identity-view.js';
import type { RevocationService } from './revocation-service.js';

export interface IdentityServiceDeps {
  knex: Knex;
  revocations: RevocationService;
  enrollments: EnrollmentService;
  view: IdentityView;
  /** Keeps the detail an identity reads of itself (`current-identity`) in memory. */
  context: Pick<IdentityContextCache, 'detail'>;
  audit?: AuditTrail;
  now?: () => Date;
}

type IdentityUpdate = IdentityChanges & { roleAttributes?: string[] };

const notFound = () => new AppError('NOT_FOUND');

async function assertPolicyExists(db: Db, authPolicyId: string): Promise<void> {
  if (!(await authPoliciesRepository.findById(db, authPolicyId))) {
    throw new AppError('NOT_FOUND', { cause: { field: 'authPolicyId', reason: 'no such auth policy' } });
  }
}

async function lockIdentity(trx: Db, id: string): Promise<Identity> {
  const identity = await identitiesRepository.findByIdForUpdate(trx, id);
  if (!identity) throw notFound();
  return identity;
}

/**
 * A change of isAdmin or authPolicyId ends the identity's sessions and tokens (they carry the old
 * privileges and factors);
 * so does a new externalId, which changes whose external JWT stands for the identity.
 */
const changesPrivileges = (current: Identity, u: IdentityUpdate) =>
  (u.isAdmin !== undefined && u.isAdmin !== current.isAdmin) ||
  (u.authPolicyId !== undefined && u.authPolicyId !== current.authPolicyId) ||
  (u.externalId !== undefined && u.externalId !== current.externalId);

/**
 * Identities of the management API. Every change is one
 * transaction; whatever ends access (delete, disable, privilege change, TOTP reset) goes through
 * the revocation service in that transaction; `afterCommit` then refreshes this process's
 * revocation state (other instances follow within a second).
 */
export function createIdentityService(deps: IdentityServiceDeps) {
  const { knex, revocations } = deps;
  const audit = deps.audit ?? NO_AUDIT;
  const now = deps.now ?? (() => new Date());

  async function update(id: string, u: IdentityUpdate): Promise<void> {
    await inTransaction(knex, async (trx, afterCommit) => {
      const current = await lockIdentity(trx, id);
      checkName('name', u.name, current.name);
      if (u.authPolicyId !== undefined && u.authPolicyId !== current.authPolicyId) {
        await assertPolicyExists(trx, u.authPolicyId);
      }
      // The default admin is the way back in when everything else fails: it stays an admin.
      if (current.isDefaultAdmin && u.isAdmin === false) {
        throw validationError('isAdmin', 'the default admin cannot stop being an admin');
      }
      const { roleAttributes, ...changes } = u;
      const revoke = changesPrivileges(current, u);
      if (revoke) {
        await revocations.revokeIdentity(trx, id, { changes, afterCommit, cause: 'privileges-changed' });
      } else await identitiesRepository.update(trx, id, changes);
      if (roleAttributes !== undefined) await roleAttributesRepository.replace(trx, id, roleAttributes);
      // Any other change ends no access, but tokens show the name (userinfo, current-api-session,
      // the TOTP label), the identity reads its own detail from memory and its permissions are
      // checked from memory (token introspection): every instance must drop its cached facts now,
      // not at the cache's expiry.
      if (!revoke) await revocations.recordIdentityChanged(trx, id);
      afterCommit(revocations.afterCommit);
      // Field names only: values (names, external ids, tags) are for the API, not the log.
      await audit.store(trx, afterCommit, {
        event: 'identity.updated',
        identityId: id,
        fields: Object.keys(u).sort(),
        ...(u.isAdmin !== undefined && { isAdmin: u.isAdmin }),
        ...(u.permissions !== undefined && { permissions: u.permissions }),
      });
    });
  }

  return {
    /** Identity, role attributes and enrollment in one transaction; returns the new id. */
    async create(input: IdentityCreateInput): Promise<string> {
      const id = newId();
      checkName('name', input.name);
      await inTransaction(knex, async (trx, afterCommit) => {
        await assertPolicyExists(trx, input.authPolicyId);
        await identitiesRepository.insert(trx, {
          id,
          name: input.name,
          type: input.type,
          isAdmin: input.isAdmin,
          externalId: input.externalId,
          authPolicyId: input.authPolicyId,
          tags: input.tags,
          permissions: input.permissions,
        });
        await roleAttributesRepository.replace(trx, id, input.roleAttributes);
        if (input.enrollment) {
          const { method } = input.enrollment;
          await deps.enrollments.addInTransaction(trx, {
            identityId: id,
            ...input.enrollment,
            fields: { caId: `enrollment.${method}`, username: `enrollment.${method}` },
          });
        }
        await audit.store(trx, afterCommit, {
          event: 'identity.created',
          identityId: id,
          type: input.type,
          isAdmin: input.isAdmin,
          ...(input.permissions.length > 0 && { permissions: input.permissions }),
          ...(input.enrollment && { enrollmentMethod: input.enrollment.method }),
        });
      });
      return id;
    },

    async list(q: ListQuery) {
      return mapPage(await identitiesRepository.list(knex, q), (items) => deps.view(knex, items));
    },

    async get(id: string) {
      const identity = await identitiesRepository.findById(knex, id);
      if (!identity) throw notFound();
      const [detail] = await deps.view(knex, [identity]);
      return detail;
    },

    /** The detail an identity reads of itself: from memory once read, until the identity changes. */
    async current(id: string) {
      const facts = await deps.context.detail(id);
      if (!facts) throw notFound();
      return deps.view.render(facts);
    },

    /** PUT: every mutable field takes the given or default value. */
    replace: (id: string, input: IdentityReplaceInput) => update(id, input),

    /** PATCH: only the given fields change. */
    patch: (id: string, input: IdentityPatchInput) => update(id, input),

    /**
     * API sessions, role attributes, authenticators, enrollments, TOTP configuration and passkeys
     * go with the row (ON DELETE CASCADE, migrations 001/002/020); policies, signers and CAs stay.
     * Certificates of 3rd-party CAs are blocked from auto CA enrollment first.
     */
    async delete(id: string): Promise<void> {
      await inTransaction(knex, async (trx, afterCommit) => {
        const identity = await lockIdentity(trx, id);
        if (identity.isDefaultAdmin) throw new AppError('CANNOT_DELETE_DEFAULT_ADMIN');
        const authenticators = await authenticatorsRepository.listForIdentity(trx, id);
        await blockCertificatesOf(trx, afterCommit, identity, authenticators, audit);
        const sessions = await apiSessionsRepository.findForIdentity(trx, id);
        await identitiesRepository.delete(trx, id);
        await revocations.recordIdentityDeleted(trx, id, { afterCommit, sessions });
        await audit.store(trx, afterCommit, { event: 'identity.deleted', identityId: id });
      });
    },

    /** `durationMinutes` 0: until an admin enables the identity again. */
    async disable(id: string, durationMinutes: number): Promise<void> {
      const disabledUntil = durationMinutes > 0 ? new Date(now().getTime() + durationMinutes * 60_000) : null;
      await inTransaction(knex, async (trx, afterCommit) => {
        await lockIdentity(trx, id);
        await revocations.revokeIdentity(trx, id, {
          changes: { disabled: true, disabledUntil },
          afterCommit,
          cause: 'disabled',
        });
        await audit.store(trx, afterCommit, { event: 'identity.disabled', identityId: id, durationMinutes });
      });
    },

    async enable(id: string): Promise<void> {
      await inTransaction(knex, async (trx, afterCommit) => {
        await lockIdentity(trx, id);
        await identitiesRepository.update(trx, id, { disabled: false, disabledUntil: null });
        await revocations.recordIdentityChanged(trx, id);
        afterCommit(revocations.afterCommit);
        await audit.store(trx, afterCommit, { event: 'identity.enabled', identityId: id });
      });
    },

    /**
     * Admin MFA reset (`DELETE /identities/{id}/mfa`): the TOTP configuration, its recovery codes
     * and every passkey go and the identity's sessions end; it enrolls again at its next login.
     */
    async resetMfa(id: string): Promise<void> {
      await inTransaction(knex, async (trx, afterCommit) => {
        await lockIdentity(trx, id);
        await mfaRecoveryCodesRepository.deleteAll(trx, id);
        await mfaTotpRepository.delete(trx, id);
        const passkeys = await passkeysRepository.deleteAllOfIdentity(trx, id);
        await revocations.revokeIdentity(trx, id, { afterCommit, cause: 'mfa-reset' });
        await audit.store(trx, afterCommit, { event: 'identity.mfa-reset', identityId: id, passkeys });
      });
    },
  };
}

export type IdentityService = ReturnType<typeof createIdentityService>;
