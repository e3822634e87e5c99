import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { deleteExpiredRows } from '../../src/services/janitor.js';
import { expectError } from '../helpers/expect-error.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  enrolledUpdbUser,
  identityDetail,
  managementApi,
  passwordLogin,
  type ManagementApi,
} from '../identities/identity-fixtures.js';

const strip = (body: any) => ({ ...body, error: { ...body.error, requestId: undefined } });

describe('password lockout', () => {
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  async function createPolicy(body: Record<string, unknown>): Promise<string> {
    const res = await api.post('/auth-policies', { body });
    if (res.status !== 201) throw new Error(`policy create failed: ${res.status} ${res.text}`);
    return res.body.data.id as string;
  }

  const failures = (identityId: string) =>
    server.app.knex('login_failures').where({ identity_id: identityId }).first();
  const hourlyFailures = (identityId: string, clientAddress = '127.0.0.1') =>
    server.app
      .knex('login_address_failures')
      .where({ identity_id: identityId, client_address: clientAddress })
      .first();
  const seedHourlyFailures = (identityId: string, inWindow: number, windowStartedAt = new Date()) =>
    server.app
      .knex('login_address_failures')
      .insert({
        identity_id: identityId,
        client_address: '127.0.0.1',
        in_window: inWindow,
        window_started_at: windowStartedAt,
      })
      .onConflict(['identity_id', 'client_address'])
      .merge();

  test('20 parallel wrong passwords lock the identity, count exactly 20 failures, and then the right password is refused alike', async () => {
    const policyId = await createPolicy({
      name: 'five-attempts',
      primary: { updb: { maxAttempts: 5, lockoutDurationMinutes: 1 } },
    });
    const user = await enrolledUpdbUser(server, api, 'lockout-user', { authPolicyId: policyId });

    const wrong = await Promise.all(
      Array.from({ length: 20 }, (_, i) => passwordLogin(server, user.username, `wrong-password-${i}`)),
    );

    expect(wrong.map((r) => r.status)).toEqual(Array(20).fill(401));
    const detail = await identityDetail(api, user.id);
    expect(detail.disabled).toBe(true);
    expect(detail.disabledUntil).not.toBeNull();
    expect(new Date(detail.disabledUntil).getTime()).toBeGreaterThan(Date.now());
    expect((await hourlyFailures(user.id)).in_window).toBe(20);

    const right = await passwordLogin(server, user.username, user.password);
    expect(right.status).toBe(401);
    expect(strip(right.body)).toEqual(strip(wrong[0]!.body));
    const session = await server.client.get('/edge/client/v1/current-api-session', {
      headers: { 'svc-session': user.token },
    });
    expect(session.status).toBe(401);
  });

  test('an attempt numbered past maxAttempts is refused even with the right password, and locks', async () => {
    const policyId = await createPolicy({
      name: 'in-flight',
      primary: { updb: { maxAttempts: 5, lockoutDurationMinutes: 1 } },
    });
    const user = await enrolledUpdbUser(server, api, 'in-flight-user', { authPolicyId: policyId });
    // Five attempts have taken their numbers and are still checking their passwords.
    await server.app.knex('login_failures').where({ identity_id: user.id }).update({ consecutive: 5 });

    const res = await passwordLogin(server, user.username, user.password);

    expect(res.status).toBe(401);
    expect((await identityDetail(api, user.id)).disabled).toBe(true);
  });

  test('after an admin enables a locked identity the right password works and the run starts again', async () => {
    const policyId = await createPolicy({
      name: 'three-attempts',
      primary: { updb: { maxAttempts: 3, lockoutDurationMinutes: 0 } },
    });
    const user = await enrolledUpdbUser(server, api, 'enable-user', { authPolicyId: policyId });
    for (let i = 0; i < 3; i++) await passwordLogin(server, user.username, 'wrong');
    const locked = await identityDetail(api, user.id);

    await api.post(`/identities/${user.id}/enable`);
    const res = await passwordLogin(server, user.username, user.password);

    expect(locked).toMatchObject({ disabled: true, disabledUntil: null });
    expect(res.status).toBe(200);
    expect((await failures(user.id)).consecutive).toBe(0);
  });

  test('fewer wrong passwords than maxAttempts, then the right one, do not lock', async () => {
    const policyId = await createPolicy({
      name: 'no-lock-yet',
      primary: { updb: { maxAttempts: 5, lockoutDurationMinutes: 1 } },
    });
    const user = await enrolledUpdbUser(server, api, 'almost-user', { authPolicyId: policyId });

    for (let i = 0; i < 4; i++) await passwordLogin(server, user.username, 'wrong');
    const res = await passwordLogin(server, user.username, user.password);
    for (let i = 0; i < 4; i++) await passwordLogin(server, user.username, 'wrong');

    expect(res.status).toBe(200);
    expect((await identityDetail(api, user.id)).disabled).toBe(false);
  });

  test('with maxAttempts 0, 100 failures in the hour refuse even the right password', async () => {
    const user = await enrolledUpdbUser(server, api, 'ceiling-user');
    await seedHourlyFailures(user.id, 100);

    const res = await passwordLogin(server, user.username, user.password);

    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_AUTH');
    expect((await identityDetail(api, user.id)).disabled).toBe(false);
  });

  test('with maxAttempts 0, 99 failures in the hour still let the right password in', async () => {
    const user = await enrolledUpdbUser(server, api, 'below-ceiling-user');
    await server.app.knex('login_failures').where({ identity_id: user.id }).update({ consecutive: 99 });
    await seedHourlyFailures(user.id, 99);

    const res = await passwordLogin(server, user.username, user.password);
    const counted = { ...(await failures(user.id)), ...(await hourlyFailures(user.id)) };
    await passwordLogin(server, user.username, 'wrong');
    const afterHundredth = await passwordLogin(server, user.username, user.password);

    expect(res.status).toBe(200);
    // The 99 stay counted (the success gives back only its own attempt), so one more failure
    // reaches the ceiling and the right password is refused from then on.
    expect(counted).toMatchObject({ in_window: 99, consecutive: 0 });
    expectError(afterHundredth, { status: 401, code: 'INVALID_AUTH' });
  });

  test('failures older than an hour do not count towards the ceiling', async () => {
    const old = await enrolledUpdbUser(server, api, 'old-failures-user');
    const recent = await enrolledUpdbUser(server, api, 'recent-failures-user');
    await seedHourlyFailures(old.id, 100, new Date(Date.now() - 3600_000 - 60_000));
    await seedHourlyFailures(recent.id, 100, new Date(Date.now() - 3600_000 + 60_000));

    const res = await passwordLogin(server, old.username, old.password);
    const control = await passwordLogin(server, recent.username, recent.password);

    expect(res.status).toBe(200);
    // A new window started with this login; the old hundred are gone from the count.
    const row = await hourlyFailures(old.id);
    expect(row.in_window).toBe(0);
    expect(new Date(row.window_started_at).getTime()).toBeGreaterThan(Date.now() - 60_000);
    // Control: the same hundred failures a minute inside the hour do refuse.
    expectError(control, { status: 401, code: 'INVALID_AUTH' });
  });

  test('with maxAttempts 0, 101 failures from one address refuse the right password from it but not from another address', async () => {
    const user = await enrolledUpdbUser(server, api, 'flooded-user');
    const otherAddress = server.newClient({ localAddress: '127.0.0.2' });

    const wrong = await Promise.all(
      Array.from({ length: 101 }, (_, i) => passwordLogin(server, user.username, `wrong-password-${i}`)),
    );
    const fromFlooder = await passwordLogin(server, user.username, user.password);
    const fromOwner = await otherAddress.post('/edge/client/v1/authenticate?method=password', {
      body: { username: user.username, password: user.password },
    });

    expect(wrong.map((r) => r.status)).toEqual(Array(101).fill(401));
    expect(fromFlooder.status).toBe(401);
    expect(fromFlooder.body.error.code).toBe('INVALID_AUTH');
    expect(fromOwner.status).toBe(200);
    expect((await hourlyFailures(user.id, '127.0.0.2')).in_window).toBe(0);
    expect((await identityDetail(api, user.id)).disabled).toBe(false);
  });

  test('the janitor deletes hourly windows that have ended and keeps current ones', async () => {
    const ended = await enrolledUpdbUser(server, api, 'ended-window-user');
    const current = await enrolledUpdbUser(server, api, 'current-window-user');
    await seedHourlyFailures(ended.id, 3, new Date(Date.now() - 2 * 3600_000));
    await seedHourlyFailures(current.id, 3);

    await deleteExpiredRows(server.app.knex, new Date());

    expect(await hourlyFailures(ended.id)).toBeUndefined();
    expect((await hourlyFailures(current.id)).in_window).toBe(3);
  });

  test('an unknown username and a wrong password get the same 401 body', async () => {
    const user = await enrolledUpdbUser(server, api, 'same-answer-user');

    const wrong = await passwordLogin(server, user.username, 'not-the-password');
    const unknown = await passwordLogin(server, 'no-such-username', 'not-the-password');

    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(strip(unknown.body)).toEqual(strip(wrong.body));
    expect(wrong.body.error.code).toBe('INVALID_AUTH');
  });

  test('a policy that does not allow UPDB refuses the right password with the same body', async () => {
    const user = await enrolledUpdbUser(server, api, 'no-updb-user');
    const policyId = await createPolicy({ name: 'no-updb', primary: { updb: { allowed: false } } });
    await api.patch(`/identities/${user.id}`, { body: { authPolicyId: policyId } });

    const refused = await passwordLogin(server, user.username, user.password);
    const unknown = await passwordLogin(server, 'no-such-username', 'x');

    expect(refused.status).toBe(401);
    expect(strip(refused.body)).toEqual(strip(unknown.body));
  });
});
