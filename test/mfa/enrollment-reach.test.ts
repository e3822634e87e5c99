import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { secretFromUrl, timeStepAt, totpCode } from '../helpers/totp.js';
import { partialLogin, tokensFrom } from '../second-factors/factor-fixtures.js';
import { createTotpPolicy, createUser, sessionOf, type TestUser } from './mfa-fixtures.js';

const MFA = '/edge/client/v1/current-identity/mfa';

describe('an API session reaches only the TOTP enrollment it started, whatever its MFA state', () => {
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
  const recoveryCodes = (headers: Headers) => server.client.get(`${MFA}/recovery-codes`, { headers });
  const me = (headers: Headers) => server.client.get('/edge/client/v1/current-identity', { headers });

  /** A bearer token of an OIDC login with the password alone (the policy owes no second factor). */
  async function bearerOf(user: TestUser): Promise<Headers> {
    const { started, response } = await partialLogin(server.client, user);
    const tokens = await tokensFrom(server.client, started, response);
    return { authorization: `Bearer ${tokens.access_token}` };
  }

  /** A session of `user` whose MFA step is owed (the policy requires TOTP). */
  async function pendingSession(user: TestUser): Promise<Headers> {
    const headers = await sessionOf(server, user);
    expect((await me(headers)).status).toBe(401);
    return headers;
  }

  /**
   * What a session that did not start the enrollment gets: nothing of it, not even that it exists,
   * and its MFA state (`meStatus`: 401 while owed, 200 when complete or none owed) unchanged.
   */
  async function expectOutOfReach(headers: Headers, secret: string, meStatus = 401) {
    const responses = {
      detail: await detail(headers),
      qrCode: await qrCode(headers),
      recoveryCodes: await recoveryCodes(headers),
      start: await start(headers),
      verify: await verify(headers, await totpCode(secret, timeStepAt())),
    };
    expect(responses.detail.status).toBe(404);
    expect(responses.detail.body.error.code).toBe('NOT_FOUND');
    expect(responses.qrCode.status).toBe(404);
    expect(responses.recoveryCodes.status).toBe(404);
    expect(responses.recoveryCodes.body.error.code).toBe('NOT_FOUND');
    expect(responses.start.status).toBe(409);
    expect(responses.start.body.error.code).toBe('MFA_EXISTS');
    expect(responses.verify.status).toBe(404);
    expect(responses.verify.body.error.code).toBe('NOT_FOUND');
    for (const res of Object.values(responses)) expect(res.text).not.toContain(secret);
    expect((await me(headers)).status).toBe(meStatus);
  }

  /** The starter sees, shows, counts and verifies its own enrollment. */
  async function expectOwnEnrollment(headers: Headers, provisioningUrl: string) {
    const ownDetail = await detail(headers);
    const ownQr = await qrCode(headers);
    const ownCodes = await recoveryCodes(headers);
    const ownVerify = await verify(headers, await totpCode(secretFromUrl(provisioningUrl), timeStepAt()));
    expect(ownDetail.status).toBe(200);
    expect(ownDetail.body.data.provisioningUrl).toBe(provisioningUrl);
    expect(ownQr.status).toBe(200);
    expect(ownQr.header('content-type')).toBe('image/png');
    expect(ownCodes.status).toBe(200);
    expect(ownCodes.body.data).toEqual({ remaining: 10 });
    expect(ownVerify.status).toBe(200);
  }

  test('an enrollment an OIDC login started: a password-only session gets 404 (detail, QR code, recovery codes), 409 and cannot verify it', async () => {
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

  test('legacy session 1 starts; password-only session 2 cannot see, count or verify it; session 1 still can', async () => {
    const user = await createUser(server, 'reach-two-sessions', totpPolicy);
    const first = await pendingSession(user);
    const second = await pendingSession(user);
    const started = await start(first);

    await expectOutOfReach(second, secretFromUrl(started.body.data.provisioningUrl));

    expect(started.status).toBe(201);
    await expectOwnEnrollment(first, started.body.data.provisioningUrl);
    expect((await me(first)).status).toBe(200);
  });

  test("opt-in TOTP: the owner's legacy session starts; a password-only legacy session reaches none of it", async () => {
    const user = await createUser(server, 'reach-optin-legacy');
    const owner = await sessionOf(server, user);
    const attacker = await sessionOf(server, user);
    const started = await start(owner);

    await expectOutOfReach(attacker, secretFromUrl(started.body.data.provisioningUrl), 200);

    expect(started.status).toBe(201);
    await expectOwnEnrollment(owner, started.body.data.provisioningUrl);
    const verified = await detail(attacker);
    expect(verified.status).toBe(200);
    expect(verified.body.data.isVerified).toBe(true);
    expect(verified.body.data.provisioningUrl).toBeUndefined();
  });

  test("opt-in TOTP: the owner's legacy session starts; a password-only OIDC bearer token reaches none of it", async () => {
    const user = await createUser(server, 'reach-optin-oidc');
    const owner = await sessionOf(server, user);
    const started = await start(owner);
    const attacker = await bearerOf(user);

    await expectOutOfReach(attacker, secretFromUrl(started.body.data.provisioningUrl), 200);

    expect(started.status).toBe(201);
    await expectOwnEnrollment(owner, started.body.data.provisioningUrl);
  });

  test('a bearer token that starts an enrollment sees and verifies it; another login of the same identity does not', async () => {
    const user = await createUser(server, 'reach-bearer-starter');
    const owner = await bearerOf(user);
    const started = await start(owner);
    const other = await bearerOf(user);
    const legacy = await sessionOf(server, user);

    await expectOutOfReach(other, secretFromUrl(started.body.data.provisioningUrl), 200);
    await expectOutOfReach(legacy, secretFromUrl(started.body.data.provisioningUrl), 200);

    expect(started.status).toBe(201);
    await expectOwnEnrollment(owner, started.body.data.provisioningUrl);
  });

  test('an enrollment without a recorded starter (from before the upgrade) is reached by no session; DELETE and a new start recover', async () => {
    const user = await createUser(server, 'reach-no-starter');
    const earlier = await server.app.services.totp.startEnrollment(user.id, user.name);
    const headers = await sessionOf(server, user);

    await expectOutOfReach(headers, secretFromUrl(earlier.provisioningUrl), 200);
    const removed = await server.client.delete(MFA, { headers });
    const restarted = await start(headers);

    expect(removed.status).toBe(200);
    expect(restarted.status).toBe(201);
    await expectOwnEnrollment(headers, restarted.body.data.provisioningUrl);
  });
});
