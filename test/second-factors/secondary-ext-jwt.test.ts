import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { waitFor } from '../helpers/wait-for.js';
import { oidcLogin, startAuthorization, submitLogin } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import {
  bearer,
  createIdp,
  createPolicy,
  extJwtChallenge,
  extJwtHelpers,
  partialLogin,
  postTotp,
  tokensFrom,
  totpQuery,
  type Idp,
} from './factor-fixtures.js';

const ME = '/edge/client/v1/current-identity';

describe('the secondary external JWT (on every API request, at the OIDC login, its challenge)', () => {
  let server: TestServer;
  let api: ManagementApi;
  let idp: Idp;
  let otherIdp: Idp;
  let policy: string;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    idp = await createIdp(api, 'second', {
      externalAuthUrl: 'https://second.idp.example/authorize',
      clientId: 'svc-app',
      scopes: ['openid', 'profile'],
    });
    otherIdp = await createIdp(api, 'other');
    policy = await createPolicy(api, 'secondary-ext-jwt', { secondary: { requireExtJwt: idp.id } });
  });
  afterAll(() => server.close());

  const extJwtQuery = () => ({
    typeId: 'EXT-JWT',
    provider: 'url',
    id: idp.id,
    httpUrl: 'https://second.idp.example/authorize',
    clientId: 'svc-app',
    scopes: ['openid', 'profile'],
  });

  const { userOf, jwtOf, loggedIn } = extJwtHelpers(() => ({ server, api, idp, policy }));

  describe('at the primary login', () => {
    test('missing: 200 with exactly the EXT-JWT query and the missing challenge, no code', async () => {
      const user = await userOf('login-missing');

      const { response } = await partialLogin(server.client, user);

      expect(response.status).toBe(200);
      expect(JSON.stringify(response.body)).toBe(
        `{"authQueries":[{"typeId":"EXT-JWT","provider":"url","id":"${idp.id}","httpUrl":"https://second.idp.example/authorize","clientId":"svc-app","scopes":["openid","profile"]}]}`,
      );
      expect(response.headerAll('www-authenticate')).toEqual([
        extJwtChallenge('missing', idp.id, idp.issuer),
      ]);
      expect(response.header('totp-required')).toBeUndefined();
      expect(response.header('location')).toBeUndefined();
    });

    test('a login that owes no TOTP code cannot enroll one mid-flow', async () => {
      const user = await userOf('login-no-totp-owed');
      const { started } = await partialLogin(server.client, user);

      const enroll = await server.client.post('/oidc/login/totp/enroll', {
        body: { authRequestId: started.authRequestId },
      });

      expect(enroll.status).toBe(400);
      expect(enroll.body.error.code).toBe('INVALID_AUTH_REQUEST');
    });

    test('expired, badly signed, or naming another identity: 200 with the expired or invalid challenge', async () => {
      const user = await userOf('login-bad-jwts');
      const someoneElse = await idp.jwt('ext-someone-else');
      const forged = await otherIdp.jwt(`ext-${user.name}`, { iss: idp.issuer });

      const expired = await partialLogin(server.client, user, bearer(await jwtOf(user, { expiresIn: -120 })));
      const wrongKey = await partialLogin(server.client, user, bearer(forged));
      const wrongUser = await partialLogin(server.client, user, bearer(someoneElse));

      expect(expired.response.status).toBe(200);
      expect(expired.response.body).toEqual({ authQueries: [extJwtQuery()] });
      expect(expired.response.headerAll('www-authenticate')).toEqual([
        extJwtChallenge('expired', idp.id, idp.issuer),
      ]);
      for (const { response } of [wrongKey, wrongUser]) {
        expect(response.status).toBe(200);
        expect(response.body).toEqual({ authQueries: [extJwtQuery()] });
        expect(response.headerAll('www-authenticate')).toEqual([
          extJwtChallenge('invalid', idp.id, idp.issuer),
        ]);
      }
    });

    test('resubmitting the primary login with a valid JWT completes it; amr pwd, ext-jwt, mfa', async () => {
      const user = await userOf('login-resubmit');
      const started = await startAuthorization(server.client, { method: 'password' });
      const credentials = { username: user.username, password: user.password };

      const first = await submitLogin(server.client, started, { body: credentials });
      const second = await submitLogin(server.client, started, {
        body: credentials,
        headers: bearer(await jwtOf(user)),
      });
      const tokens = await tokensFrom(server.client, started, second);

      expect(first.status).toBe(200);
      expect(second.status).toBe(303);
      expect(payloadOf(tokens.access_token).amr).toEqual(['pwd', 'ext-jwt', 'mfa']);
      expect(payloadOf(tokens.id_token).amr).toEqual(['pwd', 'ext-jwt', 'mfa']);
    });

    test('an ext-jwt login whose primary and secondary signer are the same: one JWT satisfies both', async () => {
      const sameSigner = await createPolicy(api, 'same-signer', {
        primary: { extJwt: { allowed: true, allowedSigners: [idp.id] } },
        secondary: { requireExtJwt: idp.id },
      });
      const user = await userOf('login-same-signer', sameSigner);

      const { tokens } = await oidcLogin(server.client, {
        method: 'ext-jwt',
        body: {},
        headers: bearer(await jwtOf(user)),
      });

      expect(payloadOf(tokens.access_token)).toMatchObject({ sub: user.id, amr: ['ext-jwt'] });
      const stored = await server.app
        .knex('api_sessions')
        .where({ id: payloadOf(tokens.access_token).z_asid })
        .first();
      expect(stored.mfa_complete).toBe(false);
    });

    test('an ext-jwt login with JWTs of two signers, in either order: amr ext-jwt and mfa, the session MFA-complete', async () => {
      const primaryIdp = await createIdp(api, 'primary-of-two');
      const twoSigners = await createPolicy(api, 'two-signers', {
        primary: { extJwt: { allowed: true, allowedSigners: [primaryIdp.id] } },
        secondary: { requireExtJwt: idp.id },
      });
      const user = await userOf('login-two-signers', twoSigners);
      const primaryJwt = await primaryIdp.jwt(`ext-${user.name}`);
      const secondaryJwt = await jwtOf(user);

      for (const order of [
        [primaryJwt, secondaryJwt],
        [secondaryJwt, primaryJwt],
      ]) {
        const { tokens } = await oidcLogin(server.client, {
          method: 'ext-jwt',
          body: {},
          headers: bearer(...order),
        });
        const claims = payloadOf(tokens.access_token);
        const stored = await server.app.knex('api_sessions').where({ id: claims.z_asid }).first();
        const session = await server.client.get('/edge/client/v1/current-api-session', {
          headers: bearer(tokens.access_token, secondaryJwt),
        });

        expect(claims).toMatchObject({ sub: user.id, amr: ['ext-jwt', 'mfa'] });
        expect(payloadOf(tokens.id_token).amr).toEqual(['ext-jwt', 'mfa']);
        expect(stored.mfa_complete).toBe(true);
        expect(session.body.data).toMatchObject({
          amr: ['ext-jwt', 'mfa'],
          isMfaRequired: true,
          isMfaComplete: true,
        });
      }
    });

    test('both factors: each is listed, a TOTP code first; satisfied ones stay satisfied, and the JWT resubmission completes', async () => {
      const both = await createPolicy(api, 'totp-and-ext-jwt', {
        secondary: { requireTotp: true, requireExtJwt: idp.id },
      });
      const user = await userOf('login-both', both);
      const { totp } = server.app.services;
      const { provisioningUrl } = await totp.startEnrollment(user.id, user.name);
      const step = timeStepAt();
      await totp.verifyEnrollment(user.id, await totpCode(provisioningUrl, step));
      const { started, response } = await partialLogin(server.client, user);
      const id = started.authRequestId;

      const verified = await postTotp(server.client, id, await totpCode(provisioningUrl, step + 1));
      const owed = await server.client.get(`/oidc/login/auth-queries?id=${id}`);
      const resubmitted = await submitLogin(server.client, started, {
        body: { username: user.username, password: user.password },
        headers: bearer(await jwtOf(user)),
      });
      const tokens = await tokensFrom(server.client, started, resubmitted);

      expect(response.status).toBe(200);
      expect(response.body).toEqual({ authQueries: [totpQuery(true), extJwtQuery()] });
      expect(response.header('totp-required')).toBe('true');
      expect(response.headerAll('www-authenticate')).toEqual([
        extJwtChallenge('missing', idp.id, idp.issuer),
      ]);
      expect(verified.status).toBe(200);
      expect(verified.body).toEqual({ authQueries: [extJwtQuery()] });
      expect(verified.header('totp-required')).toBeUndefined();
      expect(owed.body).toEqual({ authQueries: [extJwtQuery()] });
      expect(resubmitted.status).toBe(303);
      expect(payloadOf(tokens.access_token).amr).toEqual(['pwd', 'otp', 'ext-jwt', 'mfa']);
    });
  });

  describe('on every API request', () => {
    test('the access token alone is 401 with the missing challenge in the Edge envelope', async () => {
      const { tokens } = await loggedIn('api-missing');

      const res = await server.client.get(ME, { headers: bearer(tokens.access_token) });

      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
      expect(res.body.meta).toEqual({ apiVersion: '1' });
      expect(res.headerAll('www-authenticate')).toEqual([extJwtChallenge('missing', idp.id, idp.issuer)]);
    });

    test('userinfo: the access token alone is 401 with the same challenge as the Edge API; with the JWT 200', async () => {
      const { user, jwt, tokens } = await loggedIn('userinfo-secondary');

      const alone = await server.client.get('/oidc/userinfo', { headers: bearer(tokens.access_token) });
      const edge = await server.client.get(ME, { headers: bearer(tokens.access_token) });
      const withJwt = await server.client.get('/oidc/userinfo', {
        headers: bearer(jwt, tokens.access_token),
      });
      const posted = await server.client.post('/oidc/userinfo', {
        headers: bearer(tokens.access_token, jwt),
      });

      expect(alone.status).toBe(401);
      expect(alone.headerAll('www-authenticate')).toEqual([extJwtChallenge('missing', idp.id, idp.issuer)]);
      expect(alone.headerAll('www-authenticate')).toEqual(edge.headerAll('www-authenticate'));
      for (const res of [withJwt, posted]) {
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ sub: user.id, name: user.name });
      }
    });

    test('an expired JWT is 401 expired; a forged one, one naming another identity or one living ten years is 401 invalid', async () => {
      const { user, tokens } = await loggedIn('api-bad-jwts');
      const call = (jwt: string) => server.client.get(ME, { headers: bearer(tokens.access_token, jwt) });

      const expired = await call(await jwtOf(user, { expiresIn: -120 }));
      const forged = await call(await otherIdp.jwt(`ext-${user.name}`, { iss: idp.issuer }));
      const someoneElse = await call(await idp.jwt('ext-someone-else'));
      const tenYears = await call(await jwtOf(user, { expiresIn: 10 * 365 * 24 * 3600 }));

      expect(expired.status).toBe(401);
      expect(expired.headerAll('www-authenticate')).toEqual([extJwtChallenge('expired', idp.id, idp.issuer)]);
      for (const res of [forged, someoneElse, tenYears]) {
        expect(res.status).toBe(401);
        expect(res.headerAll('www-authenticate')).toEqual([extJwtChallenge('invalid', idp.id, idp.issuer)]);
      }
    });

    test('a valid JWT beside the access token is 200, in one header or two, in either order', async () => {
      const { user, jwt, tokens } = await loggedIn('api-valid');

      const oneHeader = await server.client.get(ME, { headers: bearer(tokens.access_token, jwt) });
      const reversed = await server.client.get(ME, { headers: bearer(jwt, tokens.access_token) });
      const twoHeaders = await server.client.get(ME, {
        headers: { authorization: [`Bearer ${tokens.access_token}`, `Bearer ${jwt}`] },
      });

      for (const res of [oneHeader, reversed, twoHeaders]) {
        expect(res.status).toBe(200);
        expect(res.body.data.id).toBe(user.id);
      }
    });

    test('a legacy session needs the JWT too', async () => {
      const user = await userOf('api-legacy');
      const session = await server.client.post('/edge/client/v1/authenticate?method=password', {
        body: { username: user.username, password: user.password },
      });
      const headers = { 'svc-session': session.body.data.token as string };

      const alone = await server.client.get(ME, { headers });
      const withJwt = await server.client.get(ME, { headers: { ...headers, ...bearer(await jwtOf(user)) } });

      expect(alone.status).toBe(401);
      expect(alone.headerAll('www-authenticate')).toEqual([extJwtChallenge('missing', idp.id, idp.issuer)]);
      expect(withJwt.status).toBe(200);
    });

    test('the check reads no signer from the database per request (at most once a second)', async () => {
      const { jwt, tokens } = await loggedIn('api-no-db');
      const headers = bearer(tokens.access_token, jwt);
      expect((await server.client.get(ME, { headers })).status).toBe(200); // warm the caches
      const signerReads: string[] = [];
      const record = (q: { sql: string }) => {
        if (q.sql.includes('external_jwt_signers')) signerReads.push(q.sql);
      };

      const began = Date.now();
      server.app.knex.on('query', record);
      const statuses: number[] = [];
      try {
        for (let i = 0; i < 40; i++)
          statuses.push((await server.client.get('/edge/client/v1/current-api-session', { headers })).status);
      } finally {
        server.app.knex.off('query', record);
      }
      const seconds = Math.ceil((Date.now() - began) / 1000);

      expect(statuses.every((s) => s === 200)).toBe(true);
      // One read per signer per second at most: the cache's TTL.
      expect(signerReads.length).toBeLessThanOrEqual(seconds + 1);
    });

    test('disabling the signer makes its JWTs stop satisfying the factor', async () => {
      const ownIdp = await createIdp(api, 'disabled-later');
      const ownPolicy = await createPolicy(api, 'disabled-later', {
        secondary: { requireExtJwt: ownIdp.id },
      });
      const user = await userOf('api-signer-disabled', ownPolicy);
      const jwt = await ownIdp.jwt(`ext-${user.name}`);
      const { started, response } = await partialLogin(server.client, user, bearer(jwt));
      const tokens = await tokensFrom(server.client, started, response);
      const headers = bearer(tokens.access_token, jwt);
      const before = await server.client.get(ME, { headers });

      expect(
        (await api.patch(`/external-jwt-signers/${ownIdp.id}`, { body: { enabled: false } })).status,
      ).toBe(200);
      // Every instance drops its cached signer after its one-second TTL; wait
      // for that event rather than counting polls.
      const after = await waitFor(
        async () => {
          const res = await server.client.get(ME, { headers });
          return res.status !== 200 && res;
        },
        { timeout: 15_000, interval: 100, what: 'the disabled signer to be dropped' },
      );

      expect(before.status).toBe(200);
      expect(after.status).toBe(401);
      expect(after.headerAll('www-authenticate')).toEqual([
        extJwtChallenge('missing', ownIdp.id, ownIdp.issuer),
      ]);
    });
  });
});
