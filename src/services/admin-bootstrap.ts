import { randomBytes } from 'node:crypto';
import { advisoryXactLock } from '../db/advisory-xact-lock.js';
import { inTransaction } from '../db/transaction.js';
import type { Knex } from 'knex';
import { hashPassword } from '../crypto/passwords.js';
import { newId } from '../crypto/random.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import { authenticatorsRepository } from '../repositories/authenticators-repository.js';
import { DEFAULT_POLICY_ID } from '../repositories/auth-policies-repository.js';

export interface BootstrapResult {
  created: boolean;
  username: string;
  /** Only when the password was generated: shown once, never logged elsewhere. */
  generatedPassword?: string;
}

const ADMIN_LOCK_KEY = 8319395793566789480n;

/**
 * 144 random bits, base64url, never starting with `-`: the password is typed after `-p` in
 * `svc login`, where a leading dash reads as another option.
 */
export function generatedAdminPassword(): string {
  for (;;) {
    const password = randomBytes(18).toString('base64url');
    if (!password.startsWith('-')) return password;
  }
}

/**
 * Creates the first admin (the default admin) when no admin exists, under a
 * transaction-scoped advisory lock so that instances starting together create one.
 */
export async function ensureFirstAdmin(
  knex: Knex,
  username: string,
  password?: string,
): Promise<BootstrapResult> {
  return inTransaction(knex, async (trx) => {
    await advisoryXactLock(trx, { id: ADMIN_LOCK_KEY });
    if (await identitiesRepository.hasAdmin(trx)) return { created: false, username };
    const generatedPassword = password ? undefined : generatedAdminPassword();
    const identity = await identitiesRepository.insert(trx, {
      id: newId(),
      name: username,
      type: 'User',
      isAdmin: true,
      isDefaultAdmin: true,
      authPolicyId: DEFAULT_POLICY_ID,
    });
    await authenticatorsRepository.insert(trx, {
      id: newId(),
      identityId: identity.id,
      method: 'updb',
      username,
      passwordHash: await hashPassword(password ?? generatedPassword!),
    });
    return { created: true, username, generatedPassword };
  });
}
