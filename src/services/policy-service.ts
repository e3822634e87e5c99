import type { Knex } from 'knex';
import { AppError } from '../errors/app-error.js';
import { isForeignKeyViolation, isUniqueViolation } from '../db/db-errors.js';
import type { Db } from '../db/create-database.js';
import { newId } from '../crypto/random.js';
import {
  authPoliciesRepository,
  authPolicyListFields,
  DEFAULT_POLICY_ID,
  policyConstraints,
  type AuthPolicy,
  type AuthPolicyInput,
} from '../repositories/auth-policies-repository.js';
import { externalJwtSignersRepository } from '../repositories/external-jwt-signers-repository.js';
import { parseListQuery } from '../repositories/list-query.js';
import type { PolicyPatch } from '../schemas/policy-schemas.js';
import type { RevocationService } from './revocation-service.js';

export interface PolicyServiceDeps {
  knex: Knex;
  revocations: RevocationService;
}

/** The values of a fresh `default` policy (decisions.md §3); omitted fields on create take them. */
export const FRESH_DEFAULT_POLICY: Omit<AuthPolicyInput, 'name'> = {
  primary: {
    cert: { allowed: true, allowExpiredCerts: false },
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
  },
  secondary: { requireTotp: false, requireExtJwt: null },
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
    },
    secondary: { ...base.secondary, ...defined(patch.secondary) },
  };
}

/** The policy as the API shows it (decisions.md §3: output uses `requireExtJwt`). */
export function policyView(p: AuthPolicy) {
  return {
    id: p.id,
    name: p.name,
    primary: p.primary,
    secondary: p.secondary,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

const notFound = () => new AppError('NOT_FOUND', { message: 'no auth policy with this id' });
const nameTaken = () =>
  new AppError('CONFLICT', { cause: { field: 'name', reason: 'an auth policy with this name exists' } });

/** Unknown signer ids are 404 (decisions.md §3), named by the field that holds them. */
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

/** Races between the checks above and the write end as the same answers, never a 500. */
function mapWriteError(err: unknown): never {
  if (isUniqueViolation(err, policyConstraints.nameUnique)) throw nameTaken();
  if (
    isForeignKeyViolation(err, policyConstraints.secondarySignerFk) ||
    isForeignKeyViolation(err, policyConstraints.allowedSignerFk)
  ) {
    throw new AppError('NOT_FOUND', { message: 'an external JWT signer named by the policy does not exist' });
  }
  if (isForeignKeyViolation(err, policyConstraints.identityFk)) throw inUse();
  throw err;
}

const inUse = () =>
  new AppError('CONFLICT', { message: 'the auth policy is in use by at least one identity' });

const sameSecondary = (a: AuthPolicy['secondary'], b: AuthPolicy['secondary']) =>
  a.requireTotp === b.requireTotp && a.requireExtJwt === b.requireExtJwt;

/** Auth policies CRUD with the reference and deletion rules of decisions.md §3. */
export function createPolicyService({ knex, revocations }: PolicyServiceDeps) {
  async function write<T>(work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    try {
      return await knex.transaction(work);
    } catch (err) {
      mapWriteError(err);
    }
  }

  /** Replaces the stored policy; a changed `secondary` block ends its identities' sessions. */
  async function update(id: string, build: (current: AuthPolicy) => AuthPolicyInput): Promise<void> {
    const revoked = await write(async (trx) => {
      const current = await authPoliciesRepository.findForUpdate(trx, id);
      if (!current) throw notFound();
      const next = build(current);
      await assertSignersExist(trx, next);
      await authPoliciesRepository.update(trx, id, next);
      if (sameSecondary(current.secondary, next.secondary)) return false;
      // decisions.md §3: the identities concerned authenticate again under the new factors.
      for (const identityId of await authPoliciesRepository.identityIdsUsing(trx, id)) {
        await revocations.revokeIdentity(trx, identityId);
      }
      return true;
    });
    if (revoked) await revocations.afterCommit();
  }

  return {
    async list(query: Record<string, unknown>) {
      const q = parseListQuery(query, authPolicyListFields, 'name');
      const { items, totalCount } = await authPoliciesRepository.list(knex, q);
      return { items: items.map(policyView), page: { limit: q.limit, offset: q.offset, totalCount } };
    },

    async get(id: string) {
      const policy = await authPoliciesRepository.findById(knex, id);
      if (!policy) throw notFound();
      return policyView(policy);
    },

    async create(patch: PolicyPatch): Promise<string> {
      const id = newId();
      const policy = merge(FRESH_DEFAULT_POLICY, patch);
      await write(async (trx) => {
        await assertSignersExist(trx, policy);
        await authPoliciesRepository.insert(trx, id, policy);
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
      await write(async (trx) => {
        if (!(await authPoliciesRepository.findForUpdate(trx, id))) throw notFound();
        if (await authPoliciesRepository.isInUse(trx, id)) throw inUse();
        await authPoliciesRepository.delete(trx, id);
      });
    },
  };
}

export type PolicyService = ReturnType<typeof createPolicyService>;
