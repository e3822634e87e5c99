import type { Knex } from 'knex';
import { hashPassword } from '../src/crypto/passwords.js';
import { newId } from '../src/crypto/random.js';
import {
  authPoliciesRepository,
  type AuthPolicyInput,
} from '../src/repositories/auth-policies-repository.js';
import { authenticatorsRepository } from '../src/repositories/authenticators-repository.js';
import { identitiesRepository, roleAttributesRepository } from '../src/repositories/identities-repository.js';

export const DEMO_PASSWORD = 'demo-password';

const demoPolicy: AuthPolicyInput = {
  name: 'demo-totp',
  primary: {
    cert: { allowed: true, allowExpiredCerts: false },
    updb: {
      allowed: true,
      minPasswordLength: 8,
      requireSpecialChar: false,
      requireNumberChar: false,
      requireMixedCase: false,
      maxAttempts: 5,
      lockoutDurationMinutes: 5,
    },
    extJwt: { allowed: false, allowedSigners: [] },
  },
  secondary: { requireTotp: true, requireExtJwt: null },
};

/** Demo data for local trials: a policy requiring TOTP and two password users. Idempotent. */
export async function seed(knex: Knex): Promise<string[]> {
  return knex.transaction(async (trx) => {
    const made: string[] = [];
    if (!(await authPoliciesRepository.findById(trx, 'demo-totp'))) {
      await authPoliciesRepository.insert(trx, 'demo-totp', demoPolicy);
      made.push('policy demo-totp');
    }
    for (const [name, policy] of [
      ['demo-user', 'default'],
      ['demo-mfa-user', 'demo-totp'],
    ] as const) {
      if (await identitiesRepository.findByName(trx, name)) continue;
      const identity = await identitiesRepository.insert(trx, {
        id: newId(),
        name,
        type: 'User',
        isAdmin: false,
        authPolicyId: policy,
      });
      await roleAttributesRepository.replace(trx, identity.id, ['demo']);
      await authenticatorsRepository.insert(trx, {
        id: newId(),
        identityId: identity.id,
        method: 'updb',
        username: name,
        passwordHash: await hashPassword(DEMO_PASSWORD),
      });
      made.push(`identity ${name} (password ${DEMO_PASSWORD})`);
    }
    return made;
  });
}
