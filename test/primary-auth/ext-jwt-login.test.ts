import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  exportJWK,
  generateKeyPair,
  importPKCS8,
  SignJWT,
  type CryptoKey,
  type JWK,
  type JWTPayload,
} from 'jose';
import { generateRootCa, type KeyedCert } from '../../src/crypto/pki.js';
import type { AppError } from '../../src/errors/app-error.js';
import { useMovableClock } from '../helpers/movable-clock.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  createIdentity,
  identityDetail,
  managementApi,
  passwordLogin,
  type ManagementApi,
} from '../identities/identity-fixtures.js';

const JWKS_ISSUER = 'https://idp.jwks.example';
const CERT_ISSUER = 'https://idp.cert.example';
const AUDIENCE = 'svc-audience';

/** A JWKS endpoint on 127.0.0.1 whose keys the test can rotate; counts its fetches. */
async function startJwksServer() {
  const state = { keys: [] as JWK[], fetches: 0 };
  const server: Server = createServer((req, res) => {
    state.fetches++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: state.keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  return { state, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function rsaKey(kid: string) {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

interface SignOptions {
  iss?: string;
  aud?: string;
  exp?: number | null;
  iat?: number;
  alg?: string;
  kid?: string;
  claims?: JWTPayload;
}

async function signJwt(key: CryptoKey, sub: string, o: SignOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ sub, ...o.claims })
    .setProtectedHeader({ alg: o.alg ?? 'RS256', ...(o.kid ? { kid: o.kid } : {}) })
    .setIssuer(o.iss ?? JWKS_ISSUER)
    .setAudience(o.aud ?? AUDIENCE)
    .setIssuedAt(o.iat ?? now - 60);
  if (o.exp !== null) jwt.setExpirationTime(o.exp ?? now + 300);
  return jwt.sign(key);
}

const challenge = (error: string, id: string, issuer: string, realm = 'svc-primary-ext-jwt') => {
  const description = {
    missing: 'no matching token was provided',
    invalid: 'token is invalid',
    expired: 'token expired',
  }[error];
  return `Bearer realm="${realm}", error="${error}", error_description="${description}", id="${id}", issuer="${issuer}"`;
};

describe('legacy login with an external JWT (method=ext-jwt)', () => {
  let server: TestServer;
  let api: ManagementApi;
  let jwks: Awaited<ReturnType<typeof startJwksServer>>;
  let key1: Awaited<ReturnType<typeof rsaKey>>;
  let certSignerKey: KeyedCert;
  let certPrivateKey: CryptoKey;
  let jwksSignerId: string;
  let certSignerId: string;
  let jwtPolicyId: string;

  async function createSigner(body: Record<string, unknown>): Promise<string> {
    const res = await api.post('/external-jwt-signers', { body: { audience: AUDIENCE, ...body } });
    if (res.status !== 201) throw new Error(`signer create failed: ${res.status} ${res.text}`);
    return res.body.data.id as string;
  }

  async function createPolicy(body: Record<string, unknown>): Promise<string> {
    const res = await api.post('/auth-policies', { body });
    if (res.status !== 201) throw new Error(`policy create failed: ${res.status} ${res.text}`);
    return res.body.data.id as string;
  }

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    jwks = await startJwksServer();
    key1 = await rsaKey('key-1');
    jwks.state.keys = [key1.jwk];
    certSignerKey = await generateRootCa({ commonName: 'cert signer' });
    certPrivateKey = await importPKCS8(certSignerKey.keyPem, 'ES256');
    jwksSignerId = await createSigner({
      name: 'jwks-signer',
      issuer: JWKS_ISSUER,
      audience: AUDIENCE,
      jwksEndpoint: jwks.url,
    });
    certSignerId = await createSigner({
      name: 'cert-signer',
      issuer: CERT_ISSUER,
      audience: AUDIENCE,
      certPem: certSignerKey.certPem,
    });
    jwtPolicyId = await createPolicy({ name: 'jwt-allowed', primary: { extJwt: { allowed: true } } });
  });
  afterAll(async () => {
    await server.close();
    await jwks.close();
    // Only now: a clock moved forward and then back would reopen caches' windows mid-file.
    jest.useRealTimers();
  });

  const jwtLogin = (tokens: string[] | string | undefined, api_ = 'client') =>
    server.client.post(`/edge/${api_}/v1/authenticate?method=ext-jwt`, {
      headers: tokens === undefined ? {} : { authorization: [tokens].flat().map((t) => `Bearer ${t}`) },
    });

  const user = (name: string, extra: Record<string, unknown> = {}) =>
    createIdentity(api, {
      name,
      isAdmin: false,
      externalId: `ext-${name}`,
      authPolicyId: jwtPolicyId,
      ...extra,
    });

  /** Every enabled signer's challenge, as the anonymous client list names them. */
  async function everyEnabledSigner(error: string): Promise<string[]> {
    const res = await server.client.get(`${CLIENT}/external-jwt-signers?limit=10`);
    return res.body.data.map((s: { id: string; issuer: string }) => challenge(error, s.id, s.issuer)).sort();
  }

  test('a JWT from the JWKS signer naming an externalId logs in with amr ext-jwt', async () => {
    const id = await user('jwks-user');

    const res = await jwtLogin(await signJwt(key1.privateKey, 'ext-jwks-user', { kid: 'key-1' }));

    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ identityId: id, identity: { name: 'jwks-user' } });
    const session = await server.client.get(`${CLIENT}/current-api-session`, {
      headers: { 'svc-session': res.body.data.token },
    });
    expect(session.body.data).toMatchObject({ amr: ['ext-jwt'], isCertExtendable: false });
  });

  test('a JWT from the certPem signer logs in without any network', async () => {
    const id = await user('cert-signer-user');

    const res = await jwtLogin(
      await signJwt(certPrivateKey, 'ext-cert-signer-user', { iss: CERT_ISSUER, alg: 'ES256' }),
      'management',
    );

    expect(res.status).toBe(200);
    expect(res.body.data.identityId).toBe(id);
  });

  test('the external JWT is found among several bearer tokens', async () => {
    await user('several-user');
    const foreign = await signJwt((await rsaKey('x')).privateKey, 'whoever', {
      iss: 'https://elsewhere.example',
    });

    const res = await jwtLogin([
      foreign,
      await signJwt(key1.privateKey, 'ext-several-user', { kid: 'key-1' }),
    ]);

    expect(res.status).toBe(200);
  });

  test('a wrong audience is refused with the invalid challenge of that signer only', async () => {
    await user('audience-user');

    const res = await jwtLogin(
      await signJwt(key1.privateKey, 'ext-audience-user', { kid: 'key-1', aud: 'someone-else' }),
    );

    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_AUTH');
    expect(res.headerAll('www-authenticate')).toEqual([challenge('invalid', jwksSignerId, JWKS_ISSUER)]);
  });

  test('an expired JWT is refused with the expired challenge', async () => {
    await user('expired-jwt-user');
    const exp = Math.floor(Date.now() / 1000) - 3600;

    const res = await jwtLogin(
      await signJwt(certPrivateKey, 'ext-expired-jwt-user', { iss: CERT_ISSUER, alg: 'ES256', exp }),
    );

    expect(res.status).toBe(401);
    expect(res.headerAll('www-authenticate')).toEqual([challenge('expired', certSignerId, CERT_ISSUER)]);
  });

  test('a JWT issued in the future beyond the clock skew allowance is invalid; within it, accepted', async () => {
    await user('future-iat-user');
    const now = Math.floor(Date.now() / 1000);
    const sign = (iat: number) =>
      signJwt(key1.privateKey, 'ext-future-iat-user', { kid: 'key-1', iat, exp: now + 3600 });

    const farFuture = await jwtLogin(await sign(now + 600));
    const withinSkew = await jwtLogin(await sign(now + 10));

    expect(farFuture.status).toBe(401);
    expect(farFuture.body.error.code).toBe('INVALID_AUTH');
    expect(farFuture.headerAll('www-authenticate')).toEqual([
      challenge('invalid', jwksSignerId, JWKS_ISSUER),
    ]);
    expect(withinSkew.status).toBe(200);
  });

  test('a JWT that claims to live longer than the signer allows is refused as invalid; exactly the limit is accepted', async () => {
    await user('lifetime-user');
    const now = Math.floor(Date.now() / 1000);
    const sign = (iat: number, exp: number) =>
      signJwt(key1.privateKey, 'ext-lifetime-user', { kid: 'key-1', iat, exp });
    const day = 1440 * 60;

    const tenYears = await jwtLogin(await sign(now - 60, now + 10 * 365 * day));
    const dayAndASecond = await jwtLogin(await sign(now - 60, now - 60 + day + 1));
    const exactlyADay = await jwtLogin(await sign(now - 60, now - 60 + day));

    for (const res of [tenYears, dayAndASecond]) {
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('INVALID_AUTH');
      expect(res.headerAll('www-authenticate')).toEqual([challenge('invalid', jwksSignerId, JWKS_ISSUER)]);
    }
    expect(exactlyADay.status).toBe(200);
  });

  test('without iat, the lifetime left (exp − now) is held against the signer’s limit', async () => {
    const issuer = 'https://idp.short-lived.example';
    const signerId = await createSigner({
      name: 'short-lived',
      issuer,
      certPem: certSignerKey.certPem,
      maxTokenLifetimeMinutes: 10,
    });
    await user('no-iat-user');
    const sign = async (exp: number) => {
      const jwt = new SignJWT({ sub: 'ext-no-iat-user' })
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuer(issuer)
        .setAudience(AUDIENCE)
        .setExpirationTime(exp);
      return jwt.sign(certPrivateKey);
    };
    const now = Math.floor(Date.now() / 1000);

    const withinLimit = await jwtLogin(await sign(now + 9 * 60));
    const beyondLimit = await jwtLogin(await sign(now + 60 * 60));

    expect(withinLimit.status).toBe(200);
    expect(beyondLimit.status).toBe(401);
    expect(beyondLimit.headerAll('www-authenticate')).toEqual([challenge('invalid', signerId, issuer)]);
  });

  test('a JWT signed by another key, or without exp, is invalid', async () => {
    await user('forged-user');
    const impostor = await rsaKey('key-1');

    const forged = await jwtLogin(await signJwt(impostor.privateKey, 'ext-forged-user', { kid: 'key-1' }));
    const endless = await jwtLogin(
      await signJwt(key1.privateKey, 'ext-forged-user', { kid: 'key-1', exp: null }),
    );

    for (const res of [forged, endless]) {
      expect(res.status).toBe(401);
      expect(res.headerAll('www-authenticate')).toEqual([challenge('invalid', jwksSignerId, JWKS_ISSUER)]);
    }
  });

  test('a JWT of an unknown issuer gets an invalid challenge for every enabled signer', async () => {
    const res = await jwtLogin(
      await signJwt(key1.privateKey, 'x', { kid: 'key-1', iss: 'https://unknown.example' }),
    );

    expect(res.status).toBe(401);
    expect(res.headerAll('www-authenticate').sort()).toEqual(await everyEnabledSigner('invalid'));
  });

  test('no JWT at all gets a missing challenge for every enabled signer', async () => {
    const res = await jwtLogin(undefined);

    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_AUTH');
    expect(res.headerAll('www-authenticate').sort()).toEqual(await everyEnabledSigner('missing'));
  });

  test('a disabled signer authenticates nobody and is not offered in challenges', async () => {
    const issuer = 'https://idp.disabled.example';
    const id = await createSigner({
      name: 'disabled-signer',
      enabled: false,
      issuer,
      certPem: certSignerKey.certPem,
    });
    await user('disabled-signer-user');

    const res = await jwtLogin(
      await signJwt(certPrivateKey, 'ext-disabled-signer-user', { iss: issuer, alg: 'ES256' }),
    );

    expect(res.status).toBe(401);
    expect(res.headerAll('www-authenticate').join()).not.toContain(id);
  });

  test('the default policy does not allow external JWTs', async () => {
    await user('default-policy-user', { authPolicyId: 'default' });

    const res = await jwtLogin(await signJwt(key1.privateKey, 'ext-default-policy-user', { kid: 'key-1' }));

    expect(res.status).toBe(401);
    expect(res.headerAll('www-authenticate')).toEqual([challenge('invalid', jwksSignerId, JWKS_ISSUER)]);
  });

  test('allowedSigners restricts which signers a policy accepts', async () => {
    const policyId = await createPolicy({
      name: 'cert-signer-only',
      primary: { extJwt: { allowed: true, allowedSigners: [certSignerId] } },
    });
    await user('restricted-user', { authPolicyId: policyId });

    const viaJwks = await jwtLogin(await signJwt(key1.privateKey, 'ext-restricted-user', { kid: 'key-1' }));
    const viaCert = await jwtLogin(
      await signJwt(certPrivateKey, 'ext-restricted-user', { iss: CERT_ISSUER, alg: 'ES256' }),
    );

    expect(viaJwks.status).toBe(401);
    expect(viaCert.status).toBe(200);
  });

  test('with JWTs of two signers, the one the policy allows as primary logs in, in either header order', async () => {
    const policyId = await createPolicy({
      name: 'cert-primary-jwks-secondary',
      primary: { extJwt: { allowed: true, allowedSigners: [certSignerId] } },
      secondary: { requireExtJwt: jwksSignerId },
    });
    const id = await user('two-signer-user', { authPolicyId: policyId });
    const primary = await signJwt(certPrivateKey, 'ext-two-signer-user', { iss: CERT_ISSUER, alg: 'ES256' });
    const secondary = await signJwt(key1.privateKey, 'ext-two-signer-user', { kid: 'key-1' });

    const primaryFirst = await jwtLogin([primary, secondary]);
    const secondaryFirst = await jwtLogin([secondary, primary]);
    const secondaryOnly = await jwtLogin(secondary);

    for (const res of [primaryFirst, secondaryFirst]) {
      expect(res.status).toBe(200);
      expect(res.body.data.identityId).toBe(id);
    }
    expect(secondaryOnly.status).toBe(401);
    expect(secondaryOnly.headerAll('www-authenticate')).toEqual([
      challenge('invalid', jwksSignerId, JWKS_ISSUER),
    ]);
  });

  test('a disabled identity is refused', async () => {
    const id = await user('disabled-jwt-user');
    await api.post(`/identities/${id}/disable`, { body: { durationMinutes: 0 } });

    const res = await jwtLogin(await signJwt(key1.privateKey, 'ext-disabled-jwt-user', { kid: 'key-1' }));

    expect(res.status).toBe(401);
  });

  test('a signer with useExternalId false maps the claim to the identity id: JWT login without enrollment', async () => {
    const issuer = 'https://idp.by-id.example';
    const signerId = await createSigner({
      name: 'by-id',
      issuer,
      certPem: certSignerKey.certPem,
      useExternalId: false,
    });
    const policyId = await createPolicy({
      name: 'by-id-only',
      primary: { extJwt: { allowed: true, allowedSigners: [signerId] } },
    });
    const id = await createIdentity(api, {
      name: 'no-enrollment-by-id',
      isAdmin: false,
      authPolicyId: policyId,
    });

    const res = await jwtLogin(await signJwt(certPrivateKey, id, { iss: issuer, alg: 'ES256' }));

    expect(res.status).toBe(200);
    expect(res.body.data.identityId).toBe(id);
  });

  test('claimsProperty picks another claim, also as a JSON pointer', async () => {
    const issuer = 'https://idp.claims.example';
    await createSigner({
      name: 'by-email',
      issuer,
      certPem: certSignerKey.certPem,
      claimsProperty: '/profile/email',
    });
    const id = await user('claims-user', { externalId: 'claims@example.com' });

    const res = await jwtLogin(
      await signJwt(certPrivateKey, 'not-this', {
        iss: issuer,
        alg: 'ES256',
        claims: { profile: { email: 'claims@example.com' } },
      }),
    );

    expect(res.status).toBe(200);
    expect(res.body.data.identityId).toBe(id);
  });

  test('an identity with no enrollment and no externalId is refused by every method', async () => {
    const permissive = await createPolicy({
      name: 'everything-allowed',
      primary: { extJwt: { allowed: true } },
    });
    const id = await createIdentity(api, { name: 'bare-identity', isAdmin: false, authPolicyId: permissive });

    const byJwks = await jwtLogin(await signJwt(key1.privateKey, id, { kid: 'key-1' }));
    const byCertSigner = await jwtLogin(
      await signJwt(certPrivateKey, id, { iss: CERT_ISSUER, alg: 'ES256' }),
    );
    const byPassword = await passwordLogin(server, 'bare-identity', 'any-password-at-all');
    const byCert = await server.client.post(`${CLIENT}/authenticate?method=cert`);

    for (const res of [byJwks, byCertSigner, byPassword, byCert]) {
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('INVALID_AUTH');
    }
    expect((await identityDetail(api, id)).authenticators).toEqual({});
  });

  test('a new key published by the IdP is fetched on its unknown kid, once for a burst', async () => {
    await user('rotation-user');
    const key2 = await rsaKey('key-2');
    jwks.state.keys = [key1.jwk, key2.jwk];
    // The one-second refetch guard is moved past, not slept through (test/helpers/movable-clock.ts);
    // the clock stays moved (forward only) for the rest of the file.
    useMovableClock();
    jest.setSystemTime(Date.now() + 1100);
    const before = jwks.state.fetches;

    const results = await Promise.all(
      Array.from({ length: 5 }, async () =>
        jwtLogin(await signJwt(key2.privateKey, 'ext-rotation-user', { kid: 'key-2' })),
      ),
    );

    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(jwks.state.fetches - before).toBe(1);
  });

  describe('checkSecondary (the secondary factor other modules call)', () => {
    const check = (
      tokens: string[],
      signerId: string,
      identity?: { id: string; externalId: string | null },
    ) => server.app.services.extJwtMethod.checkSecondary(tokens, signerId, identity);

    async function failureOf(promise: Promise<void>): Promise<{ code: string; challenges: string[] }> {
      try {
        await promise;
      } catch (err) {
        const e = err as AppError;
        const { formatChallenge } = await import('../../src/errors/www-authenticate.js');
        return { code: e.code, challenges: e.challenges.map(formatChallenge) };
      }
      throw new Error('expected a refusal');
    }

    const secondary = (error: string) => ({
      code: 'UNAUTHORIZED',
      challenges: [challenge(error, certSignerId, CERT_ISSUER, 'svc-secondary-ext-jwt')],
    });

    test('a valid JWT of the signer satisfies it', async () => {
      const token = await signJwt(certPrivateKey, 'ext-second', { iss: CERT_ISSUER, alg: 'ES256' });

      await expect(
        check([token], certSignerId, { id: 'any', externalId: 'ext-second' }),
      ).resolves.toBeUndefined();
    });

    test('no JWT of the signer, an expired one, an invalid one, one issued in the future, one that lives too long, or another identity’s one is refused', async () => {
      const past = Math.floor(Date.now() / 1000) - 3600;
      const otherSigner = await signJwt(key1.privateKey, 'ext-second', { kid: 'key-1' });
      const expired = await signJwt(certPrivateKey, 'ext-second', {
        iss: CERT_ISSUER,
        alg: 'ES256',
        exp: past,
      });
      const wrongAudience = await signJwt(certPrivateKey, 'ext-second', {
        iss: CERT_ISSUER,
        alg: 'ES256',
        aud: 'x',
      });
      const someoneElse = await signJwt(certPrivateKey, 'ext-other', { iss: CERT_ISSUER, alg: 'ES256' });
      const tooLongLived = await signJwt(certPrivateKey, 'ext-second', {
        iss: CERT_ISSUER,
        alg: 'ES256',
        exp: Math.floor(Date.now() / 1000) + 10 * 365 * 24 * 3600,
      });
      const issuedLater = await signJwt(certPrivateKey, 'ext-second', {
        iss: CERT_ISSUER,
        alg: 'ES256',
        iat: Math.floor(Date.now() / 1000) + 600,
      });
      const me = { id: 'any', externalId: 'ext-second' };

      expect(await failureOf(check([], certSignerId, me))).toEqual(secondary('missing'));
      expect(await failureOf(check([otherSigner], certSignerId, me))).toEqual(secondary('missing'));
      expect(await failureOf(check([expired], certSignerId, me))).toEqual(secondary('expired'));
      expect(await failureOf(check([wrongAudience], certSignerId, me))).toEqual(secondary('invalid'));
      expect(await failureOf(check([someoneElse], certSignerId, me))).toEqual(secondary('invalid'));
      expect(await failureOf(check([issuedLater], certSignerId, me))).toEqual(secondary('invalid'));
      expect(await failureOf(check([tooLongLived], certSignerId, me))).toEqual(secondary('invalid'));
    });
  });
});
