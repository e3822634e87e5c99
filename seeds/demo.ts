import type { Knex } from 'knex';
import { hashPassword } from '../src/crypto/passwords.js';
import { newId } from '../src/crypto/random.js';
import {
  authPoliciesRepository,
  type AuthPolicyInput,
} from '../src/repositories/auth-policies-repository.js';
import { authenticatorsRepository } from '../src/repositories/authenticators-repository.js';
import { identitiesRepository, roleAttributesRepository } from '../src/repositories/identities-repository.js';
import { FRESH_DEFAULT_POLICY } from '../src/services/policy-service.js';

export const DEMO_PASSWORD = 'demo-password';

// The fresh default policy, with a lockout and TOTP required: what a production policy might add.
const demoPolicy: AuthPolicyInput = {
  ...FRESH_DEFAULT_POLICY,
  name: 'demo-totp',
  primary: {
    ...FRESH_DEFAULT_POLICY.primary,
    updb: { ...FRESH_DEFAULT_POLICY.primary.updb, maxAttempts: 5, lockoutDurationMinutes: 5 },
  },
  secondary: { requireTotp: true, requireExtJwt: null, requirePasskey: false },
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
