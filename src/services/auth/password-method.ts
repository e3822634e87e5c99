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
  return async function authenticatePassword(username: string, password: string): Promise<PrimaryAuthResult> {
    const authenticator = await authenticatorsRepository.findByUsername(knex, username);
    const passwordOk = await verifyPassword(authenticator?.passwordHash, password);
    if (!authenticator) throw invalidAuth('unknown username');

    const identity = await identitiesRepository.findById(knex, authenticator.identityId);
    const policy = identity && (await authPoliciesRepository.findById(knex, identity.authPolicyId));
    if (!identity || !policy) throw invalidAuth('identity vanished');
    if (isDisabled(identity, now())) throw invalidAuth('identity disabled or locked');
    if (!policy.primary.updb.allowed) throw invalidAuth('policy does not allow UPDB');
    if (await lockout.isOverHourlyCeiling(identity.id)) throw invalidAuth('hourly failure ceiling reached');
    if (!passwordOk) {
      await lockout.recordFailure(identity, policy);
      throw invalidAuth('wrong password');
    }
    await lockout.recordSuccess(identity.id);
    return { identity, policy, amr: ['pwd'], isCertExtendable: false };
  };
}

export type PasswordMethod = ReturnType<typeof createPasswordMethod>;
