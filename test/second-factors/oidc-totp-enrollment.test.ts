import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { startAuthorization } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { secretFromUrl, timeStepAt, totpCode } from '../helpers/totp.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import {
  createIdp,
  createPolicy,
  createUser,
  enrollTotp,
  partialLogin,
  tokensFrom,
  totpQuery,
  type TestUser,
} from './factor-fixtures.js';

const ENROLL = '/oidc/login/totp/enroll';
const HTML = { accept: 'text/html' };

describe('TOTP enrollment during an OIDC flow', () => {
  let server: TestServer;
  let api: ManagementApi;
  let totpPolicy: string;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    totpPolicy = await createPolicy(api, 'enroll-totp-required', { secondary: { requireTotp: true } });
  });
  afterAll(() => server.close());

  const start = (authRequestId: string) => server.client.post(ENROLL, { body: { authRequestId } });
  const verify = (authRequestId: string, code: string) =>
    server.client.post(`${ENROLL}/verify`, { body: { authRequestId, code } });
  const abandon = (authRequestId: string) => server.client.delete(ENROLL, { body: { authRequestId } });

  /** A user of the TOTP policy without TOTP, stopped at the second factor. */
  async function owingEnrollment(name: string) {
    const user = await createUser(server, name, totpPolicy);
    const { started, response } = await partialLogin(server.client, user);
    expect(response.body).toEqual({ authQueries: [totpQuery(false)] });
    return { user, started };
  }

  test('not enrolled → POST enroll: 201 with the enrollment body; the auth request stays active', async () => {
    const { user, started } = await owingEnrollment('enroll-start');

    const res = await start(started.authRequestId);
    const owed = await server.client.get(`/oidc/login/auth-queries?id=${started.authRequestId}`);

    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['isVerified', 'provisioningUrl', 'recoveryCodes']);
    expect(res.body.isVerified).toBe(false);
    expect(res.body.provisioningUrl).toMatch(
      new RegExp(`^otpauth://totp/svc:${user.name}\\?issuer=svc&secret=[A-Z2-7]+$`),
    );
    expect(res.body.recoveryCodes).toHaveLength(10);
    expect(res.header('auth-request-id')).toBe(started.authRequestId);
    expect(owed.status).toBe(200);
    expect(owed.body).toEqual({ authQueries: [totpQuery(false)] });
  });

  test('a second start while one is in progress is 409 MFA_EXISTS', async () => {
    const { started } = await owingEnrollment('enroll-twice');
    expect((await start(started.authRequestId)).status).toBe(201);

    const again = await start(started.authRequestId);

    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('MFA_EXISTS');
  });

  test('in progress → DELETE: 200 {} and a fresh start with a new secret works', async () => {
    const { started } = await owingEnrollment('enroll-abandon');
    const first = await start(started.authRequestId);

    const abandoned = await abandon(started.authRequestId);
    const restarted = await start(started.authRequestId);

    expect(abandoned.status).toBe(200);
    expect(abandoned.body).toEqual({});
    expect(restarted.status).toBe(201);
    expect(secretFromUrl(restarted.body.provisioningUrl)).not.toBe(secretFromUrl(first.body.provisioningUrl));
  });

  test('verify: a wrong code and a recovery code are 400 MFA_INVALID_TOKEN; the right code saves it and completes with otp', async () => {
    const { user, started } = await owingEnrollment('enroll-verify');
    const { provisioningUrl, recoveryCodes } = (await start(started.authRequestId)).body;

    const wrong = await verify(started.authRequestId, '000000');
    const recovery = await verify(started.authRequestId, recoveryCodes[0]);
    const right = await verify(started.authRequestId, await totpCode(provisioningUrl));
    const tokens = await tokensFrom(server.client, started, right);
    const detail = await api.get(`/identities/${user.id}`);

    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe('MFA_INVALID_TOKEN');
    expect(recovery.status).toBe(400);
    expect(recovery.body.error.code).toBe('MFA_INVALID_TOKEN');
    expect(right.status).toBe(303);
    expect(payloadOf(tokens.access_token).amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(payloadOf(tokens.id_token).amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(detail.body.data.isMfaEnabled).toBe(true);
  });

  test('enrolled: every later login asks for the TOTP code, and a start is 409 MFA_EXISTS', async () => {
    const { user, started: first } = await owingEnrollment('enroll-then-login');
    const { provisioningUrl } = (await start(first.authRequestId)).body;
    expect((await verify(first.authRequestId, await totpCode(provisioningUrl))).status).toBe(303);

    const { started, response } = await partialLogin(server.client, user);
    const restart = await start(started.authRequestId);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ authQueries: [totpQuery(true)] });
    expect(restart.status).toBe(409);
    expect(restart.body.error.code).toBe('MFA_EXISTS');
  });

  test('enrollment steps before the primary login are 400 INVALID_AUTH_REQUEST', async () => {
    const fresh = await startAuthorization(server.client, { method: 'password' });

    const responses = [
      await start(fresh.authRequestId),
      await verify(fresh.authRequestId, '123456'),
      await abandon(fresh.authRequestId),
      await start('unknown-request'),
    ];

    for (const res of responses) {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_AUTH_REQUEST');
    }
  });

  test('a login that owes no TOTP code is refused every enrollment step and never sees the secret in progress', async () => {
    const idp = await createIdp(api, 'enroll-no-totp-idp');
    const extJwtOnly = await createPolicy(api, 'enroll-ext-jwt-only', {
      secondary: { requireExtJwt: idp.id },
    });
    const victim = await createUser(server, 'enroll-victim', extJwtOnly);
    const inProgress = await server.app.services.totp.startEnrollment(victim.id, victim.name);
    const { started, response } = await partialLogin(server.client, victim);
    const url = `${ENROLL}?authRequestID=${started.authRequestId}`;
    const totpRows = () => server.app.knex('mfa_totp').where({ identity_id: victim.id });
    const before = await totpRows();

    const htmlPage = await server.client.get(url, { headers: HTML });
    const jsonPage = await server.client.get(url);
    const post = await start(started.authRequestId);

    expect(response.status).toBe(200);
    for (const res of [htmlPage, jsonPage, post]) {
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        code: 'INVALID_AUTH_REQUEST',
        message: post.body.error.message,
      });
      expect(res.text).not.toContain(secretFromUrl(inProgress.provisioningUrl));
    }
    expect(await totpRows()).toEqual(before);
  });

  test("an enrollment the owner started elsewhere is out of a login's reach: not shown, verified or abandoned", async () => {
    const { user, started } = await owingEnrollment('enroll-owner-in-progress');
    const owners = await server.app.services.totp.startEnrollment(user.id, user.name);
    const secret = secretFromUrl(owners.provisioningUrl);
    const url = `${ENROLL}?authRequestID=${started.authRequestId}`;
    const totpRows = () => server.app.knex('mfa_totp').where({ identity_id: user.id });
    const before = await totpRows();

    const htmlPage = await server.client.get(url, { headers: HTML });
    const jsonPage = await server.client.get(url);
    const verified = await verify(started.authRequestId, await totpCode(secret, timeStepAt()));
    const abandoned = await abandon(started.authRequestId);
    const restarted = await start(started.authRequestId);

    expect(htmlPage.status).toBe(200);
    for (const res of [htmlPage, jsonPage]) expect(res.text).not.toContain(secret);
    for (const res of [verified, abandoned]) expect(res.status).toBe(404);
    expect(restarted.status).toBe(409);
    expect(restarted.body.error.code).toBe('MFA_EXISTS');
    expect(await totpRows()).toEqual(before);
  });

  describe('HTML pages (Accept: text/html)', () => {
    const page = (path: string, id: string) =>
      server.client.get(`${path}?authRequestID=${id}`, { headers: HTML });

    function expectPage(res: { status: number; header(n: string): string | undefined; text: string }) {
      expect(res.header('content-type')).toMatch(/^text\/html/);
      expect(res.header('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(res.text).toContain('<form method="post"');
    }

    test('the TOTP page is a form posting the code to /oidc/login/totp', async () => {
      const user = await createUser(server, 'html-totp');
      await enrollTotp(server, user);
      const { started } = await partialLogin(server.client, user);

      const res = await page('/oidc/login/totp', started.authRequestId);

      expect(res.status).toBe(200);
      expectPage(res);
      expect(res.text).toContain('action="/oidc/login/totp"');
      expect(res.text).toContain('name="code"');
      expect(res.text).toContain(`value="${started.authRequestId}"`);
    });

    test('the enrollment page shows the QR code of the enrollment in progress and a verify form', async () => {
      const { started } = await owingEnrollment('html-enroll');
      const before = await page(ENROLL, started.authRequestId);
      const { provisioningUrl } = (await start(started.authRequestId)).body;

      const res = await page(ENROLL, started.authRequestId);

      expect(before.status).toBe(200);
      expectPage(before);
      expect(before.text).not.toContain('<img');
      expect(res.status).toBe(200);
      expectPage(res);
      expect(res.text).toContain('<img class="qr" src="data:image/png;base64,');
      expect(res.text).toContain(`action="${ENROLL}/verify"`);
      expect(res.text).toContain(secretFromUrl(provisioningUrl));
      expect(res.header('content-security-policy')).toContain('img-src data:');
    });

    test('a browser completes the login by forms: password → enrollment page → start → verify → 303', async () => {
      const user: TestUser = await createUser(server, 'html-browser', totpPolicy);
      const started = await startAuthorization(server.client, { method: 'password' });
      const id = started.authRequestId;

      const login = await server.client.post('/oidc/login/username', {
        headers: HTML,
        form: { authRequestId: id, username: user.username, password: user.password },
      });
      const begun = await server.client.post(ENROLL, { headers: HTML, form: { authRequestId: id } });
      const secret = /<code class="secret">([A-Z2-7]+)<\/code>/.exec(begun.text)?.[1];
      const wrong = await server.client.post(`${ENROLL}/verify`, {
        headers: HTML,
        form: { authRequestId: id, code: '000000' },
      });
      const done = await server.client.post(`${ENROLL}/verify`, {
        headers: HTML,
        form: { authRequestId: id, code: await totpCode(secret!, timeStepAt()) },
      });

      expect(login.status).toBe(200);
      expect(login.header('totp-required')).toBe('true');
      expectPage(login);
      expect(login.text).toContain(`action="${ENROLL}"`);
      expect(begun.status).toBe(201);
      expect(begun.text).toContain('src="data:image/png;base64,');
      expect(begun.text.match(/<li><code>/g)).toHaveLength(10);
      expect(wrong.status).toBe(400);
      expectPage(wrong);
      expect(wrong.text).toContain('role="alert"');
      expect(done.status).toBe(303);
      expect(payloadOf((await tokensFrom(server.client, started, done)).access_token).amr).toContain('otp');
    });
  });
});
