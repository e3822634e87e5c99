import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { oidcLogin } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  enrolledUpdbUser,
  identityDetail,
  managementApi,
  passwordLogin,
  type ManagementApi,
} from './identity-fixtures.js';

/** Every table that holds data of one identity. */
const IDENTITY_TABLES = [
  'identities',
  'identity_role_attributes',
  'authenticators',
  'enrollments',
  'api_sessions',
  'mfa_totp',
  'mfa_recovery_codes',
];

describe('deleting, disabling and changing identities ends their access', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  const knex = () => server.app.knex;
  const currentIdentity = (token: string) =>
    server.client.get(`${CLIENT}/current-identity`, { headers: { 'svc-session': token } });

  async function rowsOf(identityId: string): Promise<Record<string, number>> {
    const counts: Record<string, number> = {};
    for (const table of IDENTITY_TABLES) {
      const column = table === 'identities' ? 'id' : 'identity_id';
      counts[table] = (await knex()(table).where({ [column]: identityId })).length;
    }
    return counts;
  }

  async function addTotp(identityId: string): Promise<void> {
    await knex()('mfa_totp').insert({
      identity_id: identityId,
      secret_enc: 'sealed-secret',
      is_verified: true,
    });
    await knex()('mfa_recovery_codes').insert({
      identity_id: identityId,
      code_hash: 'hash-of-a-recovery-code',
    });
  }

  test('delete removes every row of the identity in one go, refuses its session at once and keeps its policy', async () => {
    await knex()('auth_policies').insert({
      ...(await knex()('auth_policies').where({ id: 'default' }).first()),
      id: 'kept-policy',
      name: 'Kept policy',
    });
    const user = await enrolledUpdbUser(server, api, 'doomed', {
      authPolicyId: 'kept-policy',
      roleAttributes: ['a', 'b'],
    });
    expect((await api.post('/enrollments', { body: { method: 'ott', identityId: user.id } })).status).toBe(
      201,
    );
    await addTotp(user.id);
    expect(await rowsOf(user.id)).toEqual({
      identities: 1,
      identity_role_attributes: 2,
      authenticators: 1,
      enrollments: 1,
      api_sessions: 1,
      mfa_totp: 1,
      mfa_recovery_codes: 1,
    });
    expect((await currentIdentity(user.token)).status).toBe(200);

    const res = await api.delete(`/identities/${user.id}`);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: {}, meta: {} });
    expect(Object.values(await rowsOf(user.id))).toEqual(IDENTITY_TABLES.map(() => 0));
    const refused = await currentIdentity(user.token);
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('UNAUTHORIZED');
    expect((await passwordLogin(server, user.username, user.password)).status).toBe(401);
    expect(await knex()('auth_policies').where({ id: 'kept-policy' }).first()).toBeDefined();
    const revocation = await knex()('revocations').where({ kind: 'identity', subject: user.id }).first();
    expect(revocation).toMatchObject({ kind: 'identity', subject: user.id, generation: null });
    expect((await api.get(`/identities/${user.id}`)).status).toBe(404);
    expect((await api.delete(`/identities/${user.id}`)).status).toBe(404);
  });

  test('disable refuses the sessions and logins of the identity; the detail shows it; enable lets it back in', async () => {
    const user = await enrolledUpdbUser(server, api, 'suspended');
    expect((await identityDetail(api, user.id)).hasApiSession).toBe(true);

    const disabled = await api.post(`/identities/${user.id}/disable`, { body: { durationMinutes: 0 } });

    expect(disabled.status).toBe(200);
    expect((await currentIdentity(user.token)).status).toBe(401);
    const login = await passwordLogin(server, user.username, user.password);
    expect(login.status).toBe(401);
    expect(login.body.error.code).toBe('INVALID_AUTH');
    expect(await identityDetail(api, user.id)).toMatchObject({
      disabled: true,
      disabledUntil: null,
      hasApiSession: false,
    });

    const enabled = await api.post(`/identities/${user.id}/enable`);

    expect(enabled.status).toBe(200);
    expect(await identityDetail(api, user.id)).toMatchObject({ disabled: false, disabledUntil: null });
    const again = await passwordLogin(server, user.username, user.password);
    expect(again.status).toBe(200);
    expect((await currentIdentity(again.body.data.token)).status).toBe(200);
  });

  test('a timed disable shows when it ends', async () => {
    const user = await enrolledUpdbUser(server, api, 'suspended-for-a-while');
    const before = Date.now();

    const res = await api.post(`/identities/${user.id}/disable`, { form: { durationMinutes: '90' } });

    expect(res.status).toBe(200);
    const detail = await identityDetail(api, user.id);
    expect(detail.disabled).toBe(true);
    const until = new Date(detail.disabledUntil).getTime();
    expect(until).toBeGreaterThanOrEqual(before + 90 * 60_000 - 1000);
    expect(until).toBeLessThanOrEqual(Date.now() + 90 * 60_000 + 1000);
    expect((await passwordLogin(server, user.username, user.password)).status).toBe(401);
  });

  test.each([
    ['negative', { durationMinutes: -1 }],
    ['fractional', { durationMinutes: 1.5 }],
    ['text', { durationMinutes: 'soon' }],
  ])('disable with a %s durationMinutes is 400 on that field', async (kind, body) => {
    const user = await enrolledUpdbUser(server, api, `bad-disable-${kind}`);

    const res = await api.post(`/identities/${user.id}/disable`, { body });

    expect(res.status).toBe(400);
    expect(res.body.error.cause.field).toBe('durationMinutes');
    expect((await currentIdentity(user.token)).status).toBe(200);
  });

  test('changing isAdmin or authPolicyId ends the sessions; renaming does not', async () => {
    const promoted = await enrolledUpdbUser(server, api, 'promoted');
    const moved = await enrolledUpdbUser(server, api, 'moved');
    const renamed = await enrolledUpdbUser(server, api, 'renamed');
    await knex()('auth_policies').insert({
      ...(await knex()('auth_policies').where({ id: 'default' }).first()),
      id: 'other-policy',
      name: 'Other policy',
    });

    const r1 = await api.patch(`/identities/${promoted.id}`, { body: { isAdmin: true } });
    const r2 = await api.put(`/identities/${moved.id}`, {
      body: { name: 'moved', isAdmin: false, authPolicyId: 'other-policy' },
    });
    const r3 = await api.patch(`/identities/${renamed.id}`, { body: { name: 'renamed-2', isAdmin: false } });

    expect([r1.status, r2.status, r3.status]).toEqual([200, 200, 200]);
    expect((await currentIdentity(promoted.token)).status).toBe(401);
    expect((await currentIdentity(moved.token)).status).toBe(401);
    expect((await currentIdentity(renamed.token)).status).toBe(200);
    const generation = async (id: string) =>
      (await knex()('identities').where({ id }).first()).token_generation;
    expect(await generation(promoted.id)).toBe(1);
    expect(await generation(renamed.id)).toBe(0);
    // The new admin logs in again and now administers.
    const relogin = await passwordLogin(server, promoted.username, promoted.password);
    const list = await server.client.get('/edge/management/v1/identities', {
      headers: { 'svc-session': relogin.body.data.token },
    });
    expect(list.status).toBe(200);
  });

  test('a renamed identity shows its new name at once to its bearer tokens, which keep working', async () => {
    const user = await enrolledUpdbUser(server, api, 'before-rename');
    const { tokens } = await oidcLogin(server.client, {
      method: 'password',
      body: { username: user.username, password: user.password },
    });
    const headers = { authorization: `Bearer ${tokens.access_token}` };
    const nameNow = async () => ({
      session: (await server.client.get(`${CLIENT}/current-api-session`, { headers })).body.data.identity
        .name,
      userinfo: (await server.client.get('/oidc/userinfo', { headers })).body.name,
    });
    const before = await nameNow(); // the identity's facts are now cached

    const renamed = await api.patch(`/identities/${user.id}`, { body: { name: 'after-rename' } });
    const after = await nameNow();
    const enrollment = await server.client.post(`${CLIENT}/current-identity/mfa`, { headers });

    expect(before).toEqual({ session: 'before-rename', userinfo: 'before-rename' });
    expect(renamed.status).toBe(200);
    expect(after).toEqual({ session: 'after-rename', userinfo: 'after-rename' });
    expect(enrollment.status).toBe(201);
    expect(new URL(enrollment.body.data.provisioningUrl).pathname).toContain('after-rename');
    expect((await knex()('identities').where({ id: user.id }).first()).token_generation).toBe(0);
    expect((await knex()('api_sessions').where({ identity_id: user.id })).length).toBeGreaterThanOrEqual(1);
  });

  test('the admin TOTP reset removes the TOTP configuration and ends the sessions', async () => {
    const user = await enrolledUpdbUser(server, api, 'lost-phone');
    await addTotp(user.id);
    expect((await identityDetail(api, user.id)).isMfaEnabled).toBe(true);

    const res = await api.delete(`/identities/${user.id}/mfa`);

    expect(res.status).toBe(200);
    expect(await rowsOf(user.id)).toMatchObject({ mfa_totp: 0, mfa_recovery_codes: 0, api_sessions: 0 });
    expect((await identityDetail(api, user.id)).isMfaEnabled).toBe(false);
    expect((await currentIdentity(user.token)).status).toBe(401);
    expect((await passwordLogin(server, user.username, user.password)).status).toBe(200);
  });
});
