import type { Knex } from 'knex';
import { inTransaction } from '../../db/transaction.js';
import { identitiesRepository, type Identity } from '../../repositories/identities-repository.js';
import type { AuthPolicy } from '../../repositories/auth-policies-repository.js';
import { loginFailuresRepository } from '../../repositories/login-failures-repository.js';
import { NO_AUDIT, type AuditTrail } from '../audit-trail.js';
import type { RevocationService } from '../revocation-service.js';
import { clientAddressKey } from './client-address-key.js';
import { isDisabled } from './identity-status.js';

/**
 * ASVS 4.0.3 §2.2.1: at most 100 failed attempts per hour on one account, counted per client
 * address so that a flood from one address cannot lock the account's owner out from another
 * (docs/operations.md, failed password logins).
 */
export const HOURLY_FAILURE_CEILING = 100;

export interface LoginLockoutDeps {
  knex: Knex;
  revocations: RevocationService;
  /** The `auth.login` lockout is stored in the transaction that locks the identity. */
  audit?: AuditTrail;
  now?: () => Date;
}

/** One password attempt, counted before its password is checked. */
export interface LoginAttempt {
  identityId: string;
  /** The key its hourly window is counted under (`clientAddressKey`: an IPv6 address by its /64). */
  addressKey: string;
  /** This attempt's place in the run of consecutive failures (1 = first). */
  consecutive: number;
  inWindow: number;
  /** Past `maxAttempts` or this address's hourly ceiling: refused whatever the password. */
  refused: boolean;
}

/**
 * The policy's maxAttempts/lockoutDurationMinutes, counted atomically in the database so that
 * parallel requests and other instances agree. Each attempt takes its number
 * before the (slow) password check: with maxAttempts 5, twenty parallel guesses test at most five
 * passwords. Locking disables the identity, which ends its sessions like an admin's disable.
 */
export function createLoginLockout({
  knex,
  revocations,
  audit = NO_AUDIT,
  now = () => new Date(),
}: LoginLockoutDeps) {
  return {
    async begin(identityId: string, policy: AuthPolicy, remoteAddress: string): Promise<LoginAttempt> {
      const addressKey = clientAddressKey(remoteAddress);
      const counts = await loginFailuresRepository.recordFailure(knex, identityId, addressKey, now());
      const { maxAttempts } = policy.primary.updb;
      const refused =
        counts.inWindow > HOURLY_FAILURE_CEILING || (maxAttempts > 0 && counts.consecutive > maxAttempts);
      return { identityId, addressKey, ...counts, refused };
    },

    async succeed(attempt: LoginAttempt): Promise<void> {
      await loginFailuresRepository.releaseSuccess(knex, attempt.identityId, attempt.addressKey);
    },

    /**
     * A failed or refused attempt stays counted. An identity already locked or disabled gains no
     * new run. Any attempt that reaches `maxAttempts` may lock, but only the first of them does
     * (under the identity's row lock, one atomic statement ends the run), so parallel failures
     * lock once. True when this attempt locked it: its `auth.login` lockout event (with `reason`)
     * is then stored in the transaction that locked it.
     */
    async fail(
      identity: Identity,
      policy: AuthPolicy,
      attempt: LoginAttempt,
      locked: boolean,
      reason: string,
    ): Promise<boolean> {
      if (locked) {
        await loginFailuresRepository.releaseConsecutive(knex, identity.id);
        return false;
      }
      const { maxAttempts, lockoutDurationMinutes } = policy.primary.updb;
      if (maxAttempts <= 0 || attempt.consecutive < maxAttempts) return false;
      const disabledUntil =
        lockoutDurationMinutes > 0 ? new Date(now().getTime() + lockoutDurationMinutes * 60_000) : null;
      return inTransaction(knex, async (trx, afterCommit) => {
        // The identity's row orders the lockers. Attempts that arrive after a lock count a new run
        // until they find the lock and give their count back; an attempt judged before the lock
        // must not take that passing run for its own and lock a second time.
        const current = await identitiesRepository.findByIdForUpdate(trx, identity.id);
        if (!current || isDisabled(current, now())) return false;
        if (!(await loginFailuresRepository.endRunIfAtLeast(trx, identity.id, maxAttempts))) return false;
        await revocations.revokeIdentity(trx, identity.id, {
          changes: { disabled: true, disabledUntil },
          afterCommit,
          cause: 'lockout',
        });
        await audit.storeAttempt(
          { event: 'auth.login', method: 'password', outcome: 'lockout', reason, identityId: identity.id },
          { trx, afterCommit },
        );
        return true;
      });
    },
  };
}

export type LoginLockout = ReturnType<typeof createLoginLockout>;
