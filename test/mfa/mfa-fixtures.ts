import { hashPassword } from '../../src/crypto/passwords.js';
import { newId } from '../../src/crypto/random.js';
import { authPoliciesRepository } from '../../src/repositories/auth-policies-repository.js';
import { authenticatorsRepository } from '../../src/repositories/authenticators-repository.js';
import { identitiesRepository } from '../../src/repositories/identities-repository.js';
import type { TestServer } from '../helpers/test-server.js';

export const MFA_QUERY = {
  typeId: 'MFA',
  format: 'numeric',
  httpMethod: 'POST',
  httpUrl: './authenticate/mfa',
  minLength: 6,
  maxLength: 6,
  provider: 'svc',
};

export interface TestUser {
  id: string;
  name: string;
  username: string;
  password: string;
}

/**
 * A UPDB user made directly in the database (the identity API is another engineer's and may not
 * be there yet); `policyId` defaults to the default policy.
 */
export async function createUser(server: TestServer, name: string, policyId = 'default'): Promise<TestUser> {
  const knex = server.app.knex;
  const password = `pw-${newId(12)}`;
  const identity = await identitiesRepository.insert(knex, {
    id: newId(),
    name,
    type: 'User',
    isAdmin: false,
    authPolicyId: policyId,
  });
  await authenticatorsRepository.insert(knex, {
    id: newId(),
    identityId: identity.id,
    method: 'updb',
    username: name,
    passwordHash: await hashPassword(password),
  });
  return { id: identity.id, name, username: name, password };
}

/** A copy of the default policy that requires TOTP (`secondary.requireTotp`). */
export async function createTotpPolicy(server: TestServer, id: string): Promise<string> {
  const knex = server.app.knex;
  const base = (await authPoliciesRepository.findById(knex, 'default'))!;
  await knex.transaction((trx) =>
    authPoliciesRepository.insert(trx, id, {
      name: id,
      primary: base.primary,
      secondary: { requireTotp: true, requireExtJwt: null, requirePasskey: false },
      sessions: base.sessions,
    }),
  );
  return id;
}

export function login(server: TestServer, user: TestUser, api: 'client' | 'management' = 'client') {
  return server.client.post(`/edge/${api}/v1/authenticate?method=password`, {
    body: { username: user.username, password: user.password },
  });
}

/** A session token of the user (its MFA step possibly still owed). */
export async function sessionOf(server: TestServer, user: TestUser): Promise<Record<string, string>> {
  const res = await login(server, user);
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
  return { 'svc-session': res.body.data.token as string };
}
