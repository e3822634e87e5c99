import type { Knex } from 'knex';
import type { Identity } from '../../repositories/identities-repository.js';
import type { AuthPolicy } from '../../repositories/auth-policies-repository.js';
import { loginFailuresRepository } from '../../repositories/login-failures-repository.js';
import type { RevocationService } from '../revocation-service.js';

/** ASVS 4.0.3 §2.2.1: at most 100 failed attempts per hour on one account (decisions.md §7). */
export const HOURLY_FAILURE_CEILING = 100;

export interface LoginLockoutDeps {
  knex: Knex;
  revocations: RevocationService;
  now?: () => Date;
}

/**
 * The policy's maxAttempts/lockoutDurationMinutes, counted atomically in the database so that
 * parallel requests and other instances agree. Locking disables the identity, which ends its
 * sessions like an admin's disable.
 */
export function createLoginLockout({ knex, revocations, now = () => new Date() }: LoginLockoutDeps) {
  return {
    async isOverHourlyCeiling(identityId: string): Promise<boolean> {
      const counts = await loginFailuresRepository.get(knex, identityId, now());
      return counts.inWindow >= HOURLY_FAILURE_CEILING;
    },

    async recordFailure(identity: Identity, policy: AuthPolicy): Promise<void> {
      const at = now();
      const counts = await loginFailuresRepository.recordFailure(knex, identity.id, at);
      const { maxAttempts, lockoutDurationMinutes } = policy.primary.updb;
      if (maxAttempts <= 0 || counts.consecutive !== maxAttempts) return;
      const disabledUntil =
        lockoutDurationMinutes > 0 ? new Date(at.getTime() + lockoutDurationMinutes * 60_000) : null;
      await knex.transaction(async (trx) => {
        await revocations.revokeIdentity(trx, identity.id, { disabled: true, disabledUntil });
        await loginFailuresRepository.resetConsecutive(trx, identity.id);
      });
      revocations.afterCommit();
    },

    async recordSuccess(identityId: string): Promise<void> {
      await loginFailuresRepository.resetConsecutive(knex, identityId);
    },
  };
}

export type LoginLockout = ReturnType<typeof createLoginLockout>;
