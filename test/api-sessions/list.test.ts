import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectError } from '../helpers/expect-error.js';
import type { TestResponse } from '../helpers/https-client.js';
import { passwordLogin as oidcPasswordLogin, refreshTokens, type TokenSet } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  enrolledUpdbUser,
  managementApi,
  passwordLogin,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';

const ITEM_KEYS = [
  'amr',
  'authMethod',
  'createdAt',
  'expiresAt',
  'id',
  'identity',
  'ipAddress',
  'isMfaComplete',
  'isMfaRequired',
  'kind',
  'lastActivityAt',
].sort();

const query = (filter: string, extra = '') => `?filter=${encodeURIComponent(filter)}${extra}`;

describe('seeing who is signed in: API sessions on the management and client APIs', () => {
  let server: TestServer;
  let admin: ManagementApi;
  let adminId: string;
  let user: { id: string; username: string; password: string; token: string };
  let oidc: TokenSet;
  let oidcSessionId: string;
  let other: { id: string; token: string };
  /** Before any of the user's sessions were opened. */
  let started: Date;

  beforeAll(async () => {
    server = await startTestServer();
    admin = managementApi(server, await server.adminToken());
    adminId = (await admin.get('/current-identity')).body.data.id;
    await new Promise((r) => setTimeout(r, 10));
    started = new Date();
    // Its login is a legacy session of the client API.
    user = await enrolledUpdbUser(server, admin, 'sessions-user');
    oidc = (await oidcPasswordLogin(server.client, user.username, user.password)).tokens;
    oidcSessionId = payloadOf(oidc.access_token).z_asid as string;
    other = await enrolledUpdbUser(server, admin, 'sessions-other');
  });
  afterAll(() => server.close());

  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
  const session = (token: string) => ({ headers: { 'svc-session': token } });
  const own = (o: { headers: Record<string, string> }, q = '') =>
    server.client.get(`${CLIENT}/current-identity/api-sessions${q}`, o);

  async function list(path: string): Promise<any[]> {
    const res = await admin.get(path);
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    return res.body.data;
  }

  /** The response's text holds none of the secrets a client was given. */
  function expectNoSecrets(res: TestResponse): void {
    for (const secret of [user.token, other.token, oidc.access_token, oidc.refresh_token!]) {
      expect(res.text.includes(secret)).toBe(false);
    }
  }

  test('a legacy and an OIDC login of one identity are listed with where they came from, never a token', async () => {
    const res = await admin.get(`/api-sessions${query(`identityId = "${user.id}"`, '&sort=createdAt')}`);

    expect(res.status).toBe(200);
    expect(res.body.meta.pagination).toEqual({ limit: 10, offset: 0, totalCount: 2 });
    const [legacy, viaOidc] = res.body.data;
    for (const item of res.body.data) expect(Object.keys(item).sort()).toEqual(ITEM_KEYS);
    expect(legacy).toMatchObject({
      identity: { id: user.id, name: 'sessions-user' },
      kind: 'legacy',
      authMethod: 'password',
      amr: ['pwd'],
      ipAddress: '127.0.0.1',
      isMfaRequired: false,
      isMfaComplete: false,
    });
    expect(viaOidc).toMatchObject({
      id: oidcSessionId,
      identity: { id: user.id, name: 'sessions-user' },
      kind: 'oidc',
      authMethod: 'password',
      amr: ['pwd'],
      ipAddress: '127.0.0.1',
    });
    for (const item of res.body.data) {
      expect(new Date(item.createdAt).getTime()).toBeGreaterThanOrEqual(started.getTime());
      expect(new Date(item.expiresAt).getTime()).toBeGreaterThan(Date.now());
      expect(new Date(item.lastActivityAt).getTime()).toBeGreaterThanOrEqual(
        new Date(item.createdAt).getTime() - 1000,
      );
    }
    expectNoSecrets(res);
  });

  test('one session by id, and 404 for an unknown or garbage id', async () => {
    const res = await admin.get(`/api-sessions/${oidcSessionId}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: oidcSessionId, kind: 'oidc', identity: { id: user.id } });
    expectNoSecrets(res);

    expectError(await admin.get('/api-sessions/no-such-session'), { status: 404, code: 'NOT_FOUND' });
    expectError(await admin.get(`/api-sessions/${'x'.repeat(300)}`), { status: 404, code: 'NOT_FOUND' });
  });

  test("an identity's sessions, and 404 for an unknown identity", async () => {
    const items = await list(`/identities/${user.id}/api-sessions`);
    expect(items.map((s) => s.kind).sort()).toEqual(['legacy', 'oidc']);
    expect(items.every((s) => s.identity.id === user.id)).toBe(true);

    expectError(await admin.get('/identities/no-such-identity/api-sessions'), {
      status: 404,
      code: 'NOT_FOUND',
    });
  });

  test('filters on kind, method, address and date-time ranges; sorts like other lists', async () => {
    const mine = `identityId = "${user.id}"`;
    expect((await list(`/api-sessions${query(`${mine} and kind = "oidc"`)}`)).map((s) => s.id)).toEqual([
      oidcSessionId,
    ]);
    expect(await list(`/api-sessions${query(`${mine} and authMethod = "password"`)}`)).toHaveLength(2);
    expect(await list(`/api-sessions${query(`${mine} and ipAddress = "127.0.0.1"`)}`)).toHaveLength(2);
    expect(await list(`/api-sessions${query('identityName = "sessions-other"')}`)).toHaveLength(1);

    const since = started.toISOString();
    const future = new Date(Date.now() + 86_400_000).toISOString();
    expect(await list(`/api-sessions${query(`${mine} and createdAt >= "${since}"`)}`)).toHaveLength(2);
    expect(await list(`/api-sessions${query(`${mine} and createdAt < "${since}"`)}`)).toHaveLength(0);
    expect(
      await list(`/api-sessions${query(`${mine} and expiresAt > "${since}" and expiresAt <= "${future}"`)}`),
    ).toHaveLength(2);
    expect(await list(`/api-sessions${query(`${mine} and lastActivityAt > "${future}"`)}`)).toHaveLength(0);
    // The bootstrap admin's session predates the others.
    const all = await list(`/api-sessions${query(`createdAt < "${since}"`)}`);
    expect(all.map((s) => s.identity.id)).toContain(adminId);

    const desc = await list(`/api-sessions?sort=${encodeURIComponent('createdAt desc')}&limit=500`);
    const times = desc.map((s) => new Date(s.createdAt).getTime());
    expect(times).toEqual([...times].sort((a, b) => b - a));
    const paged = await admin.get('/api-sessions?limit=1&offset=1');
    expect(paged.body.meta.pagination).toMatchObject({ limit: 1, offset: 1 });
    expect(paged.body.meta.pagination.totalCount).toBeGreaterThanOrEqual(4);
  });

  test.each([
    ['kind > "legacy"', /field "kind" does not support >/],
    ['isMfaComplete <= true', /field "isMfaComplete" does not support <=/],
    ['createdAt >= "yesterday"', /field "createdAt" needs a date-time/],
    ['expiresAt < "2026-11-01"', /field "expiresAt" needs a date-time/],
    ['createdAt >= null', /field "createdAt" needs a date-time/],
    ['tokenHash = "x"', /unknown field "tokenHash"/],
  ])('filter %j is 400 naming the field', async (filter, reason) => {
    for (const path of ['/api-sessions', `/identities/${user.id}/api-sessions`]) {
      const error = expectError(await admin.get(`${path}${query(filter)}`), {
        status: 400,
        code: 'COULD_NOT_VALIDATE',
      });
      expect(error.cause).toMatchObject({ field: 'filter' });
      expect(error.cause.reason).toMatch(reason);
    }
    const error = expectError(await own(session(user.token), query(filter)), {
      status: 400,
      code: 'COULD_NOT_VALIDATE',
    });
    expect(error.cause.reason).toMatch(reason);
  });

  test('hostile lists: a filter over 4 KiB is 400, many ranges up to it are answered, derived fields sort', async () => {
    const huge = `createdAt >= "${started.toISOString()}"`.repeat(150);
    expectError(await admin.get(`/api-sessions${query(huge)}`), { status: 400, code: 'COULD_NOT_VALIDATE' });
    const many = Array.from({ length: 80 }, () => `lastActivityAt > "2000-01-01T00:00:00Z"`).join(' and ');
    expect(await list(`/api-sessions${query(`identityId = "${user.id}" and ${many}`)}`)).toHaveLength(2);
    for (const sort of ['lastActivityAt desc', 'expiresAt, identityName desc', 'ipAddress, authMethod']) {
      expect((await list(`/api-sessions?sort=${encodeURIComponent(sort)}`)).length).toBeGreaterThan(0);
    }
  });

  test('the same range operators work on the date-time fields of other lists', async () => {
    const since = started.toISOString();
    const res = await admin.get(`/identities${query(`createdAt >= "${since}"`)}`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((i: { name: string }) => i.name).sort()).toEqual([
      'sessions-other',
      'sessions-user',
    ]);
    expectError(await admin.get(`/identities${query('name >= "a"')}`), {
      status: 400,
      code: 'COULD_NOT_VALIDATE',
    });
  });

  test("an OIDC session's last activity is its last refresh", async () => {
    const before = (await admin.get(`/api-sessions/${oidcSessionId}`)).body.data;
    await new Promise((r) => setTimeout(r, 20));
    const refreshedAt = Date.now();
    const refreshed = await refreshTokens(server.client, oidc.refresh_token!);
    expect(refreshed.status).toBe(200);
    oidc = refreshed.body as TokenSet;

    const after = (await admin.get(`/api-sessions/${oidcSessionId}`)).body.data;
    expect(new Date(after.lastActivityAt).getTime()).toBeGreaterThanOrEqual(refreshedAt - 1);
    expect(new Date(after.lastActivityAt).getTime()).toBeGreaterThan(
      new Date(before.lastActivityAt).getTime(),
    );
    expect(after.createdAt).toBe(before.createdAt);
    expect(payloadOf(oidc.access_token).z_asid).toBe(oidcSessionId);
  });

  test('the caller sees its own sessions only, the one it calls with marked current, with either credential', async () => {
    const viaLegacy = await own(session(user.token));
    const viaBearer = await own(bearer(oidc.access_token));

    for (const res of [viaLegacy, viaBearer]) {
      expect(res.status).toBe(200);
      expect(res.body.meta.pagination.totalCount).toBe(2);
      expect(res.body.data.every((s: any) => s.identity.id === user.id)).toBe(true);
      for (const item of res.body.data)
        expect(Object.keys(item).sort()).toEqual([...ITEM_KEYS, 'isCurrent'].sort());
      expectNoSecrets(res);
    }
    const current = (res: TestResponse) =>
      res.body.data.filter((s: any) => s.isCurrent).map((s: any) => s.kind);
    expect(current(viaLegacy)).toEqual(['legacy']);
    expect(current(viaBearer)).toEqual(['oidc']);
    expect(viaBearer.body.data.find((s: any) => s.isCurrent).id).toBe(oidcSessionId);

    const others = await own(session(other.token));
    expect(others.body.data.map((s: any) => s.identity.id)).toEqual([other.id]);
    const filtered = await own(session(user.token), query('kind = "oidc"'));
    expect(filtered.body.data.map((s: any) => s.id)).toEqual([oidcSessionId]);
    // The client API has no management list, and the caller no way to name another identity.
    expect((await server.client.get(`${CLIENT}/api-sessions`, session(user.token))).status).toBe(404);
  });

  test('a non-admin gets 403 on the management lists and detail, and no credentials 401', async () => {
    const asUser = managementApi(server, user.token);
    for (const path of [
      '/api-sessions',
      `/api-sessions/${oidcSessionId}`,
      `/identities/${user.id}/api-sessions`,
    ]) {
      expectError(await asUser.get(path), { status: 403, code: 'FORBIDDEN' });
      expectError(await server.client.get(`/edge/management/v1${path}`, bearer(oidc.access_token)), {
        status: 403,
        code: 'FORBIDDEN',
      });
      expect((await server.client.get(`/edge/management/v1${path}`)).status).toBe(401);
    }
    expect((await own({ headers: {} })).status).toBe(401);
  });

  test('ended and expired sessions are not listed', async () => {
    const extra = (await passwordLogin(server, user.username, user.password)).body.data;
    const ids = async () => (await list(`/identities/${user.id}/api-sessions?limit=500`)).map((s) => s.id);
    expect(await ids()).toContain(extra.id);

    await server.client.delete(`${CLIENT}/current-api-session`, session(extra.token));
    expect(await ids()).not.toContain(extra.id);
    expectError(await admin.get(`/api-sessions/${extra.id}`), { status: 404, code: 'NOT_FOUND' });

    // Expired but not yet removed by the janitor.
    const stale = (await passwordLogin(server, user.username, user.password)).body.data;
    await server.app
      .knex('api_sessions')
      .where({ id: stale.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    expect(await ids()).not.toContain(stale.id);
    expectError(await admin.get(`/api-sessions/${stale.id}`), { status: 404, code: 'NOT_FOUND' });
  });
});
