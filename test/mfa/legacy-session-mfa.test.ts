import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { createTotpPolicy, createUser, login, MFA_QUERY, sessionOf, type TestUser } from './mfa-fixtures.js';

const CLIENT = '/edge/client/v1';

describe('TOTP for legacy sessions (authenticate + authenticate/mfa)', () => {
  let server: TestServer;
  let totpPolicy: string;
  beforeAll(async () => {
    server = await startTestServer();
    totpPolicy = await createTotpPolicy(server, 'totp-required');
  });
  afterAll(() => server.close());

  const me = (headers: Record<string, string>) =>
    server.client.get(`${CLIENT}/current-identity`, { headers });
  const mfa = (headers: Record<string, string>, code: unknown, api = 'client') =>
    server.client.post(`/edge/${api}/v1/authenticate/mfa`, { headers, body: { code } });

  /** Enrolls and verifies TOTP with the code of `step` through a session that owes nothing. */
  async function enroll(user: TestUser) {
    const headers = await sessionOf(server, user);
    const started = (await server.client.post(`${CLIENT}/current-identity/mfa`, { headers })).body.data;
    const step = timeStepAt();
    const verify = await server.client.post(`${CLIENT}/current-identity/mfa/verify`, {
      headers,
      body: { code: await totpCode(started.provisioningUrl, step) },
    });
    expect(verify.status).toBe(200);
    return { url: started.provisioningUrl as string, codes: started.recoveryCodes as string[], step };
  }

  async function pendingSession(user: TestUser, api: 'client' | 'management' = 'client') {
    const res = await login(server, user, api);
    expect(res.status).toBe(200);
    expect(res.body.data.isMfaRequired).toBe(true);
    return { 'svc-session': res.body.data.token as string };
  }

  test('a login under a TOTP-requiring policy owes the MFA step with exactly the MFA auth query', async () => {
    const user = await createUser(server, 'policy user', totpPolicy);

    const res = await login(server, user);

    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ isMfaRequired: true, isMfaComplete: false });
    expect(JSON.stringify(res.body.data.authQueries)).toBe(
      '[{"typeId":"MFA","format":"numeric","httpMethod":"POST","httpUrl":"./authenticate/mfa","minLength":6,"maxLength":6,"provider":"svc"}]',
    );
  });

  test('a login without TOTP owes nothing', async () => {
    const user = await createUser(server, 'plain user');

    const res = await login(server, user);

    expect(res.body.data).toMatchObject({ isMfaRequired: false, isMfaComplete: false, authQueries: [] });
    expect((await me({ 'svc-session': res.body.data.token })).status).toBe(200);
  });

  test('an MFA-pending session is refused elsewhere but may enroll, and verifying completes it', async () => {
    const user = await createUser(server, 'policy enroller', totpPolicy);
    const headers = await pendingSession(user);

    const refused = await me(headers);
    const mfaState = await server.client.get(`${CLIENT}/current-identity/mfa`, { headers });
    const started = await server.client.post(`${CLIENT}/current-identity/mfa`, { headers });
    const stillRefused = await me(headers);
    const verify = await server.client.post(`${CLIENT}/current-identity/mfa/verify`, {
      headers,
      body: { code: await totpCode(started.body.data.provisioningUrl) },
    });
    const allowed = await me(headers);
    const session = await server.client.get(`${CLIENT}/current-api-session`, { headers });

    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('UNAUTHORIZED');
    expect(mfaState.status).toBe(404);
    expect(started.status).toBe(201);
    expect(stillRefused.status).toBe(401);
    expect(verify.status).toBe(200);
    expect(allowed.status).toBe(200);
    expect(allowed.body.data.isMfaEnabled).toBe(true);
    // The same pair as the authenticate answer: required by the policy, and now done (RFC 8176 mfa).
    expect(session.body.data).toMatchObject({
      isMfaRequired: true,
      isMfaComplete: true,
      amr: ['pwd', 'otp', 'mfa'],
    });
  });

  test('a verified TOTP makes later logins owe it even without the policy flag; a code completes them', async () => {
    const user = await createUser(server, 'self enrolled');
    const { url, step } = await enroll(user);
    const headers = await pendingSession(user);

    const login2 = await login(server, user);
    const refused = await me(headers);
    const wrong = await mfa(headers, await totpCode(url, step + 10));
    const ok = await mfa(headers, await totpCode(url, step + 1));
    const allowed = await me(headers);

    expect(JSON.stringify(login2.body.data.authQueries)).toBe(JSON.stringify([MFA_QUERY]));
    expect(refused.status).toBe(401);
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe('MFA_INVALID_TOKEN');
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ data: {}, meta: {} });
    expect(allowed.status).toBe(200);
  });

  test('a used code is refused a second time and the next step is accepted', async () => {
    const user = await createUser(server, 'replayer');
    const { url, step } = await enroll(user);
    const first = await pendingSession(user);
    const second = await pendingSession(user);

    const replayOfEnrollmentCode = await mfa(first, await totpCode(url, step));
    const next = await mfa(first, await totpCode(url, step + 1));
    const replayOfNext = await mfa(second, await totpCode(url, step + 1));

    expect(replayOfEnrollmentCode.status).toBe(400);
    expect(replayOfEnrollmentCode.body.error.code).toBe('MFA_INVALID_TOKEN');
    expect(next.status).toBe(200);
    expect(replayOfNext.status).toBe(400);
    expect((await me(first)).status).toBe(200);
    expect((await me(second)).status).toBe(401);
  });

  test('recovery codes complete the step once each and the remaining count goes down', async () => {
    const user = await createUser(server, 'recoverer');
    const { codes } = await enroll(user);
    const first = await pendingSession(user);
    const second = await pendingSession(user);
    const third = await pendingSession(user);
    const typed = `${codes[0]!.slice(0, 6).toLowerCase()}-${codes[0]!.slice(6).toLowerCase()}`;

    const used = await mfa(first, typed);
    const reused = await mfa(second, codes[0]);
    const other = await mfa(third, codes[1]);
    const remaining = await server.client.get(`${CLIENT}/current-identity/mfa/recovery-codes`, {
      headers: first,
    });

    expect(used.status).toBe(200);
    expect(reused.status).toBe(400);
    expect(reused.body.error.code).toBe('MFA_INVALID_TOKEN');
    expect(other.status).toBe(200);
    expect(remaining.body.data.remaining).toBe(8);
    expect((await me(second)).status).toBe(401);
    expect((await me(third)).status).toBe(200);
  });

  test('a management login completes its MFA step at the relative ./authenticate/mfa of that API', async () => {
    const user = await createUser(server, 'management user');
    const { url, step } = await enroll(user);
    const headers = await pendingSession(user, 'management');

    const ok = await mfa(headers, await totpCode(url, step + 1), 'management');

    expect(ok.status).toBe(200);
    expect((await server.client.get('/edge/management/v1/current-identity', { headers })).status).toBe(200);
  });

  test('a policy made through the policy API with secondary.requireTotp makes the login owe TOTP', async () => {
    const admin = { 'svc-session': await server.adminToken() };
    const created = await server.client.post('/edge/management/v1/auth-policies', {
      headers: admin,
      body: { name: 'totp via api', secondary: { requireTotp: true } },
    });
    expect(created.status).toBe(201);
    const user = await createUser(server, 'api policy user', created.body.data.id);

    const res = await login(server, user);

    expect(res.body.data).toMatchObject({
      isMfaRequired: true,
      isMfaComplete: false,
      authQueries: [MFA_QUERY],
    });
  });

  test('an admin TOTP reset removes the configuration: later logins owe nothing and enrollment starts afresh', async () => {
    const user = await createUser(server, 'reset user');
    await enroll(user);
    const admin = { 'svc-session': await server.adminToken() };

    const reset = await server.client.delete(`/edge/management/v1/identities/${user.id}/mfa`, {
      headers: admin,
    });
    const detail = await server.client.get(`/edge/management/v1/identities/${user.id}`, { headers: admin });
    const relogin = await login(server, user);
    const headers = { 'svc-session': relogin.body.data.token as string };
    const restart = await server.client.post(`${CLIENT}/current-identity/mfa`, { headers });

    expect(reset.status).toBe(200);
    expect(detail.body.data.isMfaEnabled).toBe(false);
    expect(relogin.body.data).toMatchObject({ isMfaRequired: false, authQueries: [] });
    expect((await me(headers)).status).toBe(200);
    expect(restart.status).toBe(201);
  });

  test('authenticate/mfa needs a session and a code', async () => {
    const user = await createUser(server, 'no code', totpPolicy);
    const headers = await pendingSession(user);

    const anonymous = await server.client.post(`${CLIENT}/authenticate/mfa`, { body: { code: '123456' } });
    const missing = await server.client.post(`${CLIENT}/authenticate/mfa`, { headers, body: {} });
    const notEnrolled = await mfa(headers, '123456');

    expect(anonymous.status).toBe(401);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'code' } });
    expect(notEnrolled.status).toBe(400);
    expect(notEnrolled.body.error.code).toBe('MFA_INVALID_TOKEN');
    expect((await me(headers)).status).toBe(401);
  });
});
