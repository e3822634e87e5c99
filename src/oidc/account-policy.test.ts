import { describe, expect, test } from '@jest/globals';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { Identity } from '../repositories/identities-repository.js';
import { createAccountPolicy } from './account-policy.js';
import { createCompletedLogins } from './completed-logins.js';
import { createGrantPrefetch } from './grant-prefetch.js';
import type { LoginFacts, OidcSessions } from './oidc-sessions.js';

const identity: Identity = {
  id: 'id-1',
  name: 'alice',
  type: 'User',
  isAdmin: false,
  isDefaultAdmin: false,
  externalId: null,
  authPolicyId: 'default',
  tags: {},
  disabled: false,
  disabledUntil: null,
  tokenGeneration: 3,
  permissions: [],
  createdAt: new Date(0),
  updatedAt: new Date(0),
};
const facts: LoginFacts = {
  accountId: 'id-1',
  apiSessionId: 'session-1',
  amr: ['pwd'],
  configTypes: [],
  isCertExtendable: false,
  isAdmin: false,
  tokenGeneration: 3,
  authTime: 0,
};

/** A token request whose code or refresh token brought its grant's facts and identity along. */
function policyWith(revoked: { sessions?: string[]; generationBelow?: number }) {
  const prefetch = createGrantPrefetch();
  const ctx = {} as KoaContextWithOIDC;
  prefetch.remember(ctx, 'grant-1', {
    accountId: 'id-1',
    grant: undefined,
    facts,
    identity,
    requireExtJwtSigner: null,
  });
  const policy = createAccountPolicy({
    findIdentity: async () => identity,
    sessions: { factsOf: async () => facts } as unknown as OidcSessions,
    prefetch,
    completedLogins: createCompletedLogins(),
    revocations: {
      isSessionRevoked: (id) => (revoked.sessions ?? []).includes(id),
      isIdentityTokenRevoked: (_id, generation) => generation < (revoked.generationBelow ?? 0),
    },
  });
  return policy.findAccount(ctx, 'id-1', { grantId: 'grant-1' } as never);
}

describe('accounts of a token request whose facts were read before a revocation landed', () => {
  test('are found while nothing is revoked', async () => {
    expect(await policyWith({})).toMatchObject({ accountId: 'id-1' });
  });

  test('are refused once their API session is revoked', async () => {
    expect(await policyWith({ sessions: ['session-1'] })).toBeUndefined();
  });

  test("are refused once the identity's tokens of their generation are revoked", async () => {
    expect(await policyWith({ generationBelow: 4 })).toBeUndefined();
  });
});
