import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { secretFromUrl, timeStepAt, totpCode } from '../helpers/totp.js';
import { partialLogin } from '../second-factors/factor-fixtures.js';
import { createTotpPolicy, createUser, sessionOf, type TestUser } from './mfa-fixtures.js';

const MFA = '/edge/client/v1/current-identity/mfa';

describe('a session whose MFA step is still owed reaches only the TOTP enrollment it started', () => {
  let server: TestServer;
  let totpPolicy: string;
  beforeAll(async () => {
    server = await startTestServer();
    totpPolicy = await createTotpPolicy(server, 'reach-totp-required');
  });
  afterAll(() => server.close());

  type Headers = Record<string, string>;
  const detail = (headers: Headers) => server.client.get(MFA, { headers });
  const qrCode = (headers: Headers) => server.client.get(`${MFA}/qr-code`, { headers });
  const start = (headers: Headers) => server.client.post(MFA, { headers });
  const verify = (headers: Headers, code: string) =>
    server.client.post(`${MFA}/verify`, { headers, body: { code } });
  const me = (headers: Headers) => server.client.get('/edge/client/v1/current-identity', { headers });

  /** A session of `user` whose MFA step is owed (the policy requires TOTP). */
  async function pendingSession(user: TestUser): Promise<Headers> {
    const headers = await sessionOf(server, user);
    expect((await me(headers)).status).toBe(401);
    return headers;
  }

  /** What a session that did not start the enrollment gets: nothing of it, and no completed step. */
  async function expectOutOfReach(headers: Headers, secret: string) {
    const responses = {
      detail: await detail(headers),
      qrCode: await qrCode(headers),
      start: await start(headers),
      verify: await verify(headers, await totpCode(secret, timeStepAt())),
    };
    expect(responses.detail.status).toBe(404);
    expect(responses.detail.body.error.code).toBe('NOT_FOUND');
    expect(responses.qrCode.status).toBe(404);
    expect(responses.start.status).toBe(409);
    expect(responses.start.body.error.code).toBe('MFA_EXISTS');
    expect(responses.verify.status).toBe(404);
    expect(responses.verify.body.error.code).toBe('NOT_FOUND');
    for (const res of Object.values(responses)) expect(res.text).not.toContain(secret);
    expect((await me(headers)).status).toBe(401);
  }

  test('an enrollment an OIDC login started: a password-only session gets 404, 404, 409 and cannot verify it', async () => {
    const user = await createUser(server, 'reach-oidc-started', totpPolicy);
    const { started } = await partialLogin(server.client, user);
    const enrollment = await server.client.post('/oidc/login/totp/enroll', {
      body: { authRequestId: started.authRequestId },
    });
    const secret = secretFromUrl(enrollment.body.provisioningUrl);
    const headers = await pendingSession(user);
    const rowBefore = await server.app.knex('mfa_totp').where({ identity_id: user.id }).first();

    await expectOutOfReach(headers, secret);

    expect(enrollment.status).toBe(201);
    expect(await server.app.knex('mfa_totp').where({ identity_id: user.id }).first()).toEqual(rowBefore);
  });

  test('legacy session 1 starts; password-only session 2 cannot see or verify it; session 1 still can', async () => {
    const user = await createUser(server, 'reach-two-sessions', totpPolicy);
    const first = await pendingSession(user);
    const second = await pendingSession(user);
    const started = await start(first);
    const secret = secretFromUrl(started.body.data.provisioningUrl);

    await expectOutOfReach(second, secret);
    const ownDetail = await detail(first);
    const ownQr = await qrCode(first);
    const ownVerify = await verify(first, await totpCode(secret, timeStepAt()));

    expect(started.status).toBe(201);
    expect(ownDetail.status).toBe(200);
    expect(ownDetail.body.data.provisioningUrl).toBe(started.body.data.provisioningUrl);
    expect(ownQr.status).toBe(200);
    expect(ownQr.header('content-type')).toBe('image/png');
    expect(ownVerify.status).toBe(200);
    expect((await me(first)).status).toBe(200);
  });

  test('a session that owes no MFA step still sees an enrollment started elsewhere', async () => {
    const user = await createUser(server, 'reach-complete-session');
    const elsewhere = await server.app.services.totp.startEnrollment(user.id, user.name);
    const headers = await sessionOf(server, user);

    const res = await detail(headers);
    const qr = await qrCode(headers);

    expect((await me(headers)).status).toBe(200);
    expect(res.status).toBe(200);
    expect(res.body.data.provisioningUrl).toBe(elsewhere.provisioningUrl);
    expect(qr.status).toBe(200);
  });
});
