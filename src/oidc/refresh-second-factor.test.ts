import { describe, expect, test } from '@jest/globals';
import { errors, type FindAccount, type KoaContextWithOIDC } from 'oidc-provider';
import { createGrantPrefetch } from './grant-prefetch.js';
import { createRefreshSecondFactor } from './refresh-second-factor.js';

type GrantToken = Parameters<FindAccount>[2];

/**
 * A refresh grant's check has only the one read of its refresh token to go by: a refresh whose
 * read brought nothing (which the provider never does) is refused, never waved through.
 */
describe('refresh second factor without the read of its refresh token', () => {
  const refreshToken = { kind: 'RefreshToken', grantId: 'grant-1', consumed: false } as unknown as GrantToken;
  const ctx = { req: {} } as unknown as KoaContextWithOIDC;
  const findAccount: FindAccount = async (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) });

  test('is refused with invalid_grant', async () => {
    let checked = 0;
    const guard = createRefreshSecondFactor({
      extJwt: { checkSecondary: async () => void checked++ },
      prefetch: createGrantPrefetch(),
    }).guard(findAccount);

    await expect(guard(ctx, 'id-1', refreshToken)).rejects.toBeInstanceOf(errors.InvalidGrant);
    expect(checked).toBe(0);
  });

  test('for another account than the one read is refused with invalid_grant', async () => {
    const prefetch = createGrantPrefetch();
    prefetch.remember(ctx, 'grant-1', {
      accountId: 'id-2',
      grant: undefined,
      facts: undefined,
      identity: undefined,
      requireExtJwtSigner: null,
    });
    const guard = createRefreshSecondFactor({ extJwt: { checkSecondary: async () => {} }, prefetch }).guard(
      findAccount,
    );

    await expect(guard(ctx, 'id-1', refreshToken)).rejects.toBeInstanceOf(errors.InvalidGrant);
  });
});
