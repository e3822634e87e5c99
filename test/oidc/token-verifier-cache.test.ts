import { describe, expect, test } from '@jest/globals';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { GENERATION_CLAIM } from '../../src/oidc/account-policy.js';
import { ACCESS_TOKEN_AUDIENCE } from '../../src/oidc/create-provider.js';
import { createTokenVerifier } from '../../src/oidc/token-verifier.js';

const ISSUER = 'https://controller.test/oidc';

async function rsaKey(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } as JWK };
}

/** The bearer verifier over real RS256 keys, with revocations and identity facts held in plain maps. */
async function setup() {
  let clock = Date.now();
  const revokedSessions = new Set<string>();
  const verifier = createTokenVerifier({
    issuers: () => [ISSUER],
    revocations: {
      isSessionRevoked: (id) => revokedSessions.has(id),
      isIdentityTokenRevoked: () => false,
    },
    identities: { get: async (id) => ({ id, name: `name-of-${id}`, requireExtJwtSigner: null }) },
    now: () => new Date(clock),
  });
  const key = await rsaKey('k1');
  verifier.setKeys([key.jwk]);
  const mint = (signing: typeof key, lifetimeSeconds = 300) => {
    const iat = Math.floor(clock / 1000);
    return new SignJWT({
      z_asid: 'session-1',
      z_ia: false,
      z_ct: [],
      z_t: 'a',
      z_ice: false,
      [GENERATION_CLAIM]: 0,
    })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: signing.jwk.kid! })
      .setIssuer(ISSUER)
      .setAudience(ACCESS_TOKEN_AUDIENCE)
      .setSubject('identity-1')
      .setIssuedAt(iat)
      .setExpirationTime(iat + lifetimeSeconds)
      .sign(signing.privateKey);
  };
  return {
    verifier,
    key,
    mint,
    revokedSessions,
    moveClock: (ms: number) => (clock += ms),
    verify: (token: string) => verifier.bearer.verify([token], undefined),
  };
}

describe('the cache of verified access tokens', () => {
  test('a token verified once is not verified again: its signature check is off the hot path', async () => {
    const { verifier, key, mint, verify } = await setup();
    const token = await mint(key);
    await expect(verify(token)).resolves.toMatchObject({ identityId: 'identity-1', sessionId: 'session-1' });
    // The same kid now names another key: a signature check would fail, a cache hit does not check.
    const impostor = await rsaKey('k1');
    verifier.setKeys([impostor.jwk]);
    await expect(verify(token)).resolves.toMatchObject({ identityId: 'identity-1' });
    // A token not seen before is checked, and fails against the impostor key.
    await expect(verify(await mint(key, 301))).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  test('a cached token is refused once its session is revoked', async () => {
    const { key, mint, verify, revokedSessions } = await setup();
    const token = await mint(key);
    await verify(token);
    revokedSessions.add('session-1');
    await expect(verify(token)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  test('a cached token is refused from its exp on, with the expired challenge', async () => {
    const { key, mint, verify, moveClock } = await setup();
    const token = await mint(key, 60);
    await verify(token);
    moveClock(60_000);
    const refused = await verify(token).catch((err: unknown) => err);
    expect(refused).toMatchObject({ code: 'UNAUTHORIZED', detail: 'expired' });
  });

  test('a cached token is refused once its signing key has left the key set', async () => {
    const { verifier, key, mint, verify } = await setup();
    const token = await mint(key);
    await verify(token);
    verifier.setKeys([(await rsaKey('k2')).jwk]);
    await expect(verify(token)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  test('at most the configured number of tokens is kept', async () => {
    const { key, mint } = await setup();
    const small = createTokenVerifier({
      issuers: () => [ISSUER],
      revocations: { isSessionRevoked: () => false, isIdentityTokenRevoked: () => false },
      identities: { get: async (id) => ({ id, name: id, requireExtJwtSigner: null }) },
      cacheSize: 2,
    });
    small.setKeys([key.jwk]);
    const tokens = [await mint(key, 100), await mint(key, 200), await mint(key, 300)];
    for (const t of tokens) await small.bearer.verify([t], undefined);
    // Swapping the key under the same kid shows which tokens are still served from the cache.
    small.setKeys([(await rsaKey('k1')).jwk]);
    await expect(small.bearer.verify([tokens[0]!], undefined)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
    });
    await expect(small.bearer.verify([tokens[2]!], undefined)).resolves.toBeTruthy();
  });
});
