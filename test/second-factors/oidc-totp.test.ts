import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { resumeCookieHeader } from '../../src/oidc/resume-in-process.js';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { passwordLogin, startAuthorization } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { totpCode } from '../helpers/totp.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import {
  createPolicy,
  createUser,
  enrollTotp,
  partialLogin,
  postTotp,
  tokensFrom,
  totpQuery,
} from './factor-fixtures.js';

describe('TOTP in the OIDC flow (primary pending → partially authenticated → complete)', () => {
  let server: TestServer;
  let api: ManagementApi;
  let totpPolicy: string;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    totpPolicy = await createPolicy(api, 'oidc-totp-required', { secondary: { requireTotp: true } });
  });
  afterAll(() => server.close());

  const authQueries = (query: string) => server.client.get(`/oidc/login/auth-queries?${query}`);

  test('credentials accepted with TOTP owed: 200 with exactly the TOTP query and totp-required, no code', async () => {
    const user = await createUser(server, 'totp-owed');
    await enrollTotp(server, user);

    const { started, response } = await partialLogin(server.client, user);

    expect(response.status).toBe(200);
    expect(JSON.stringify(response.body)).toBe(
      '{"authQueries":[{"typeId":"MFA","format":"alphaNumeric","httpMethod":"POST","httpUrl":"/oidc/login/totp","minLength":6,"maxLength":6,"provider":"svc","isTotpEnrolled":true}]}',
    );
    expect(response.header('totp-required')).toBe('true');
    expect(response.header('auth-request-id')).toBe(started.authRequestId);
    expect(response.header('location')).toBeUndefined();
    expect(response.header('www-authenticate')).toBeUndefined();
  });

  test('a policy requiring TOTP of an identity without it owes TOTP with isTotpEnrolled false', async () => {
    const user = await createUser(server, 'totp-policy-no-app', totpPolicy);

    const { response } = await partialLogin(server.client, user);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ authQueries: [totpQuery(false)] });
    expect(response.header('totp-required')).toBe('true');
  });

  test('while partially authenticated the provider resumes nothing: no code, no token', async () => {
    const user = await createUser(server, 'totp-no-resume');
    await enrollTotp(server, user);
    const { started } = await partialLogin(server.client, user);
    const uid = started.authRequestId;
    const entry = server.app.services.oidc!.registry.pick(
      server.app.listeners[0]!.spec,
      new URL(server.url).host,
    )!;

    const withoutCookie = await server.client.get(`/oidc/authorization/${uid}`);
    // Even the signed resume cookie a browser holds only gets a fresh login, never a code.
    const withCookie = await server.client.get(`/oidc/authorization/${uid}`, {
      headers: { cookie: resumeCookieHeader(entry, uid) },
    });
    const token = await server.client.post('/oidc/token', {
      form: {
        grant_type: 'authorization_code',
        code: uid,
        redirect_uri: started.redirectUri,
        client_id: 'svc',
        code_verifier: started.pkce.verifier,
      },
    });

    expect(withoutCookie.status).toBe(400);
    expect(withoutCookie.header('location')).toBeUndefined();
    expect(withCookie.status).toBe(303);
    expect(withCookie.header('location')).toMatch(/^\/oidc\/login\/username\?authRequestID=/);
    expect(withCookie.header('location')).not.toContain('code=');
    expect(token.status).toBe(400);
    expect(token.body.error).toBe('invalid_grant');
    expect(
      await server.app
        .knex('oidc_payloads')
        .where({ model: 'AuthorizationCode' })
        .whereRaw("payload->>'accountId' = ?", [user.id]),
    ).toEqual([]);
  });

  test('a TOTP code before the primary login is 400 INVALID_AUTH_REQUEST, so is an unknown auth request', async () => {
    const started = await startAuthorization(server.client, { method: 'password' });

    const early = await postTotp(server.client, started.authRequestId, '123456');
    const unknown = await postTotp(server.client, 'no-such-request', '123456');

    expect(early.status).toBe(400);
    expect(early.body.error.code).toBe('INVALID_AUTH_REQUEST');
    expect(early.header('auth-request-id')).toBe(started.authRequestId);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('INVALID_AUTH_REQUEST');
  });

  test('an invalid code is 400 INVALID_TOTP_CODE and leaves the request partially authenticated; a valid one completes with otp in amr', async () => {
    const user = await createUser(server, 'totp-invalid-then-valid');
    const { url, step } = await enrollTotp(server, user);
    const { started } = await partialLogin(server.client, user);

    const wrong = await postTotp(server.client, started.authRequestId, '000000');
    const stillOwed = await authQueries(`id=${started.authRequestId}`);
    const right = await postTotp(server.client, started.authRequestId, await totpCode(url, step + 1));
    const tokens = await tokensFrom(server.client, started, right);

    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toMatchObject({
      code: 'INVALID_TOTP_CODE',
      message: 'the TOTP code supplied was invalid',
    });
    expect(stillOwed.status).toBe(200);
    expect(stillOwed.body).toEqual({ authQueries: [totpQuery(true)] });
    expect(right.status).toBe(303);
    expect(right.header('auth-request-id')).toBe(started.authRequestId);
    expect(payloadOf(tokens.access_token).amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(payloadOf(tokens.id_token).amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(payloadOf(tokens.access_token).sub).toBe(user.id);
  });

  test('a TOTP code is accepted once: the same code in a second login is refused', async () => {
    const user = await createUser(server, 'totp-replay');
    const { url, step } = await enrollTotp(server, user);
    const code = await totpCode(url, step + 1);
    const first = await partialLogin(server.client, user);
    const second = await partialLogin(server.client, user);

    const accepted = await postTotp(server.client, first.started.authRequestId, code);
    const replayed = await postTotp(server.client, second.started.authRequestId, code);

    expect(accepted.status).toBe(303);
    expect(replayed.status).toBe(400);
    expect(replayed.body.error.code).toBe('INVALID_TOTP_CODE');
  });

  test('a recovery code completes a login once; the same recovery code again is refused', async () => {
    const user = await createUser(server, 'totp-recovery');
    const { recoveryCodes } = await enrollTotp(server, user);
    const first = await partialLogin(server.client, user);
    const second = await partialLogin(server.client, user);

    const used = await postTotp(server.client, first.started.authRequestId, recoveryCodes[0]!);
    const again = await postTotp(server.client, second.started.authRequestId, recoveryCodes[0]!);
    const tokens = await tokensFrom(server.client, first.started, used);

    expect(used.status).toBe(303);
    expect(payloadOf(tokens.access_token).amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe('INVALID_TOTP_CODE');
  });

  test('after 5 wrong codes even a correct one is 429 RATE_LIMITED with Retry-After', async () => {
    const user = await createUser(server, 'totp-rate-limit');
    const { url, step } = await enrollTotp(server, user);
    const { started } = await partialLogin(server.client, user);

    const wrong = [];
    for (let i = 0; i < 5; i++)
      wrong.push((await postTotp(server.client, started.authRequestId, '000000')).status);
    const limited = await postTotp(server.client, started.authRequestId, await totpCode(url, step + 1));

    expect(wrong).toEqual([400, 400, 400, 400, 400]);
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(Number(limited.header('retry-after'))).toBeGreaterThan(0);
  });

  test('a form body with authRequestId works like JSON', async () => {
    const user = await createUser(server, 'totp-form');
    const { url, step } = await enrollTotp(server, user);
    const { started } = await partialLogin(server.client, user);

    const res = await server.client.post('/oidc/login/totp', {
      form: { authRequestId: started.authRequestId, code: await totpCode(url, step + 1) },
    });

    expect(res.status).toBe(303);
    expect((await tokensFrom(server.client, started, res)).access_token).toBeDefined();
  });

  test('auth-queries lists what is owed by id or authRequestID; unknown → 400; before the primary → 400', async () => {
    const user = await createUser(server, 'totp-auth-queries');
    await enrollTotp(server, user);
    const { started } = await partialLogin(server.client, user);
    const fresh = await startAuthorization(server.client, { method: 'password' });

    const byId = await authQueries(`id=${started.authRequestId}`);
    const byAuthRequestId = await authQueries(`authRequestID=${started.authRequestId}`);
    const unknown = await authQueries('id=nope');
    const early = await authQueries(`id=${fresh.authRequestId}`);

    for (const res of [byId, byAuthRequestId]) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ authQueries: [totpQuery(true)] });
      expect(res.header('totp-required')).toBe('true');
      expect(res.header('auth-request-id')).toBe(started.authRequestId);
    }
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('INVALID_AUTH_REQUEST');
    expect(early.status).toBe(400);
    expect(early.body.error.code).toBe('INVALID_AUTH_REQUEST');
  });

  test('an identity deleted while partially authenticated cannot finish the login', async () => {
    const user = await createUser(server, 'totp-deleted-mid-flow');
    const { url, step } = await enrollTotp(server, user);
    const { started } = await partialLogin(server.client, user);
    expect((await api.delete(`/identities/${user.id}`)).status).toBe(200);

    const res = await postTotp(server.client, started.authRequestId, await totpCode(url, step + 1));

    // The deletion ends the identity's unfinished logins with it.
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_AUTH_REQUEST');
    expect(res.header('location')).toBeUndefined();
  });

  test('when its policy starts requiring TOTP, earlier tokens are refused and a new login asks for TOTP', async () => {
    const policy = await createPolicy(api, 'totp-later', {});
    const user = await createUser(server, 'totp-later-user', policy);
    const { tokens } = await passwordLogin(server.client, user.username, user.password);
    const bearer = { authorization: `Bearer ${tokens.access_token}` };
    const before = await server.client.get('/edge/client/v1/current-identity', { headers: bearer });

    const patched = await api.patch(`/auth-policies/${policy}`, {
      body: { secondary: { requireTotp: true } },
    });
    const after = await server.client.get('/edge/client/v1/current-identity', { headers: bearer });
    const { response } = await partialLogin(server.client, user);

    expect(before.status).toBe(200);
    expect(patched.status).toBe(200);
    expect(after.status).toBe(401);
    expect(after.header('www-authenticate')).toBe(
      'Bearer realm="svc-oidc", error="invalid", error_description="token is invalid"',
    );
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ authQueries: [totpQuery(false)] });
  });
});
