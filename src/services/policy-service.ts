import type { Knex } from 'knex';
import { mapPage, type ListQuery } from '../db/list-query.js';
import { AppError } from '../errors/app-error.js';
import { inTransaction } from '../db/transaction.js';
import type { Db } from '../db/create-database.js';
import { newId } from '../crypto/random.js';
import {
  authPoliciesRepository,
  DEFAULT_POLICY_ID,
  type AuthPolicy,
  type AuthPolicyInput,
} from '../repositories/auth-policies-repository.js';
import { externalJwtSignersRepository } from '../repositories/external-jwt-signers-repository.js';
import { checkName } from '../schemas/name-rules.js';
import type { PolicyPatch } from '../schemas/policy-schemas.js';
import { NO_AUDIT, type AuditTrail } from './audit-trail.js';
import type { AuthPolicyView } from '../schemas/policy-views.js';
import type { RevocationService } from './revocation-service.js';

export interface PolicyServiceDeps {
  knex: Knex;
  revocations: RevocationService;
  audit?: AuditTrail;
}

/** The values of a fresh `default` policy; omitted fields on create take them. */
export const FRESH_DEFAULT_POLICY: Omit<AuthPolicyInput, 'name'> = {
  primary: {
    cert: { allowed: true, allowExpiredCerts: false, bindTokens: true },
    updb: {
      allowed: true,
      minPasswordLength: 8,
      requireSpecialChar: false,
      requireNumberChar: false,
      requireMixedCase: false,
      maxAttempts: 0,
      lockoutDurationMinutes: 0,
    },
    extJwt: { allowed: false, allowedSigners: [] },
    passkey: { allowed: true },
  },
  secondary: { requireTotp: false, requireExtJwt: null, requirePasskey: false },
  sessions: { max: 0, onLimit: 'evictOldest' },
};

/** `base` with every member `patch` gives replaced. */
function merge(base: Omit<AuthPolicyInput, 'name'> & { name?: string }, patch: PolicyPatch): AuthPolicyInput {
  const p = patch.primary;
  const defined = <T extends object>(o: T | undefined) =>
    Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
  return {
    name: patch.name ?? base.name ?? '',
    primary: {
      cert: { ...base.primary.cert, ...defined(p?.cert) },
      updb: { ...base.primary.updb, ...defined(p?.updb) },
      extJwt: { ...base.primary.extJwt, ...defined(p?.extJwt) },
      passkey: { ...base.primary.passkey, ...defined(p?.passkey) },
    },
    secondary: { ...base.secondary, ...defined(patch.secondary) },
    sessions: { ...base.sessions, ...defined(patch.sessions) },
  };
}

/** The policy as the API shows it (output uses `requireExtJwt`). */
export function policyView(p: AuthPolicy): AuthPolicyView {
  return {
    id: p.id,
    name: p.name,
    primary: p.primary,
    secondary: p.secondary,
    sessions: p.sessions,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

const notFound = () => new AppError('NOT_FOUND', { message: 'no auth policy with this id' });

/** Unknown signer ids are 404, named by the field that holds them. */
async function assertSignersExist(trx: Db, p: AuthPolicyInput): Promise<void> {
  const wanted = [...p.primary.extJwt.allowedSigners, p.secondary.requireExtJwt].filter(
    (s): s is string => s !== null,
  );
  const found = await externalJwtSignersRepository.existing(trx, wanted);
  const missing = p.primary.extJwt.allowedSigners.find((s) => !found.has(s));
  if (missing !== undefined) throw unknownSigner('primary.extJwt.allowedSigners', missing);
  const secondary = p.secondary.requireExtJwt;
  if (secondary !== null && !found.has(secondary)) throw unknownSigner('secondary.requireExtJwt', secondary);
}

const unknownSigner = (field: string, id: string) =>
  new AppError('NOT_FOUND', {
    message: 'an external JWT signer named by the policy does not exist',
    cause: { field, reason: `no external JWT signer with id ${JSON.stringify(id)}` },
  });

const inUse = () =>
  new AppError('CONFLICT', { message: 'the auth policy is in use by at least one identity' });

const sameSecondary = (a: AuthPolicy['secondary'], b: AuthPolicy['secondary']) =>
  a.requireTotp === b.requireTotp &&
  a.requireExtJwt === b.requireExtJwt &&
  a.requirePasskey === b.requirePasskey;

/** Auth policies CRUD: a policy in use by an identity cannot be deleted, `default` never. */
export function createPolicyService({ knex, revocations, audit = NO_AUDIT }: PolicyServiceDeps) {
  /** Replaces the stored policy; a changed `secondary` block ends its identities' sessions. */
  async function update(id: string, build: (current: AuthPolicy) => AuthPolicyInput): Promise<void> {
    await inTransaction(knex, async (trx, afterCommit) => {
      const current = await authPoliciesRepository.findForUpdate(trx, id);
      if (!current) throw notFound();
      const next = build(current);
      checkName('name', next.name, current.name);
      await assertSignersExist(trx, next);
      await authPoliciesRepository.update(trx, id, next);
      const factorsChanged = !sameSecondary(current.secondary, next.secondary);
      await audit.store(trx, afterCommit, { event: 'policy.updated', policyId: id, factorsChanged });
      if (!factorsChanged) return;
      // The identities concerned authenticate again under the new factors.
      for (const identityId of await authPoliciesRepository.identityIdsUsing(trx, id)) {
        await revocations.revokeIdentity(trx, identityId, { afterCommit, cause: 'policy-changed' });
      }
      afterCommit(revocations.afterCommit);
    });
  }

  return {
    async list(q: ListQuery) {
      return mapPage(await authPoliciesRepository.list(knex, q), (items) => items.map(policyView));
    },

    async get(id: string) {
      const policy = await authPoliciesRepository.findById(knex, id);
      if (!policy) throw notFound();
      return policyView(policy);
    },

    async create(patch: PolicyPatch): Promise<string> {
      const id = newId();
      const policy = merge(FRESH_DEFAULT_POLICY, patch);
      checkName('name', policy.name);
      await inTransaction(knex, async (trx, afterCommit) => {
        await assertSignersExist(trx, policy);
        await authPoliciesRepository.insert(trx, id, policy);
        await audit.store(trx, afterCommit, { event: 'policy.created', policyId: id });
      });
      return id;
    },

    /** PUT: omitted members take the fresh default values, as on create. */
    replace: (id: string, patch: PolicyPatch) => update(id, () => merge(FRESH_DEFAULT_POLICY, patch)),

    patch: (id: string, patch: PolicyPatch) => update(id, (current) => merge(current, patch)),

    async remove(id: string): Promise<void> {
      if (id === DEFAULT_POLICY_ID) {
        throw new AppError('CONFLICT', { message: 'the default auth policy cannot be deleted' });
      }
      await inTransaction(
        knex,
        async (trx, afterCommit) => {
          if (!(await authPoliciesRepository.findForUpdate(trx, id))) throw notFound();
          if (await authPoliciesRepository.isInUse(trx, id)) throw inUse();
          await authPoliciesRepository.delete(trx, id);
          await audit.store(trx, afterCommit, { event: 'policy.deleted', policyId: id });
        },
        { removes: true },
      );
    },
  };
}

export type PolicyService = ReturnType<typeof createPolicyService>;
