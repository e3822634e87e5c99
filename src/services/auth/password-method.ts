import type { Knex } from 'knex';
import { AppError } from '../../errors/app-error.js';
import { verifyPassword } from '../../crypto/passwords.js';
import { authenticatorsRepository } from '../../repositories/authenticators-repository.js';
import { identitiesRepository } from '../../repositories/identities-repository.js';
import { authPoliciesRepository } from '../../repositories/auth-policies-repository.js';
import { isDisabled } from './identity-status.js';
import type { LoginLockout } from './login-lockout.js';
import type { PrimaryAuthResult } from './primary-result.js';

export interface PasswordMethodDeps {
  knex: Knex;
  lockout: LoginLockout;
  now?: () => Date;
}

const invalidAuth = (detail: string) => new AppError('INVALID_AUTH', { detail });

/**
 * UPDB primary authentication. Every refusal — unknown user, wrong password, locked or disabled
 * identity, method not allowed by the policy — is the same 401 after the same Argon2id work.
 */
export function createPasswordMethod({ knex, lockout, now = () => new Date() }: PasswordMethodDeps) {
  async function target(identityId: string) {
    const identity = await identitiesRepository.findById(knex, identityId);
    const policy = identity && (await authPoliciesRepository.findById(knex, identity.authPolicyId));
    return identity && policy ? { identity, policy } : undefined;
  }

  return async function authenticatePassword(username: string, password: string): Promise<PrimaryAuthResult> {
    const authenticator = await authenticatorsRepository.findByUsername(knex, username);
    const found = authenticator && (await target(authenticator.identityId));
    if (!authenticator || !found || !found.policy.primary.updb.allowed) {
      await verifyPassword(undefined, password);
      throw invalidAuth(authenticator ? 'policy does not allow UPDB' : 'unknown username');
    }
    const { identity, policy } = found;
    // Counted before the check (decisions.md §7): parallel guesses cannot outrun the limits.
    const attempt = await lockout.begin(identity.id, policy);
    const passwordOk = await verifyPassword(authenticator.passwordHash, password);
    // Re-read: a lock set by a parallel attempt while this one was hashing must hold.
    const current = await identitiesRepository.findById(knex, identity.id);
    const locked = !current || isDisabled(current, now());
    if (passwordOk && !locked && !attempt.refused) {
      await lockout.succeed(attempt);
      return { identity: current, policy, amr: ['pwd'], isCertExtendable: false };
    }
    await lockout.fail(identity, policy, attempt, locked);
    throw invalidAuth(
      locked ? 'identity disabled or locked' : attempt.refused ? 'attempt limit' : 'wrong password',
    );
  };
}

export type PasswordMethod = ReturnType<typeof createPasswordMethod>;
