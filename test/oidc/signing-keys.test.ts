import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { passwordLogin } from '../helpers/oidc-client.js';
import { useMovableClock } from '../helpers/movable-clock.js';
import { waitFor } from '../helpers/wait-for.js';
import { enrolledUpdbUser, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';

describe('signing keys in the database and their rotation', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer({ env: { SVC_EDGE_OIDC_KEY_ROTATION_GRACE: '1m' } });
    api = managementApi(server, await server.adminToken());
  });
  afterAll(async () => {
    await server.close();
    jest.useRealTimers();
  });

  const kidOf = (jwt: string) => decodeProtectedHeader(jwt).kid;
  const publishedKids = async () =>
    ((await server.client.get('/oidc/keys')).body.keys as { kid: string }[]).map((k) => k.kid);

  test('the first start created one RS256 signing key whose private part is sealed', async () => {
    const rows = await server.app.knex('signing_keys').select('*');

    expect(rows).toHaveLength(1);
    expect(rows[0].alg).toBe('RS256');
    expect(rows[0].private_jwk_enc).toMatch(/^v1\./);
    expect(rows[0].private_jwk_enc).not.toContain('"d"');
    expect(await publishedKids()).toEqual([rows[0].kid]);
    const list = await api.get('/keys');
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      {
        kid: rows[0].kid,
        alg: 'RS256',
        state: 'signing',
        createdAt: expect.any(String),
        signsFrom: expect.any(String),
        retiredAt: null,
      },
    ]);
  });

  test('rotation publishes the new key at once, signs with it after the grace, and the old tokens stay valid', async () => {
    const before = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const oldKid = kidOf(before.tokens.access_token);

    const rotated = await api.post('/keys/rotate');
    const publishedAtOnce = await publishedKids();
    const duringGrace = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const listed = (await api.get('/keys')).body.data;
    // The minute of grace is moved through, not waited out (test/helpers/movable-clock.ts); the
    // clock only moves forward, so it stays moved for the rest of this file. The server's key
    // watcher then rebuilds on its next poll: wait for that event, not for a fixed time.
    useMovableClock();
    jest.setSystemTime(new Date(rotated.body.data.signsFrom).getTime() + 1000);
    const after = await waitFor(
      async () => {
        const login = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
        return kidOf(login.tokens.access_token) === rotated.body.data.kid && login;
      },
      { timeout: 20_000, interval: 250, what: 'tokens signed by the new key' },
    );

    expect(rotated.status).toBe(200);
    const newKid = rotated.body.data.kid;
    expect(rotated.body.data).toMatchObject({ alg: 'RS256', state: 'published' });
    expect(newKid).not.toBe(oldKid);
    expect(publishedAtOnce.sort()).toEqual([oldKid, newKid].sort());
    expect(kidOf(duringGrace.tokens.access_token)).toBe(oldKid);
    expect(listed.map((k: { kid: string; state: string }) => [k.kid, k.state]).sort()).toEqual(
      [
        [oldKid, 'signing'],
        [newKid, 'published'],
      ].sort(),
    );
    expect(kidOf(after.tokens.access_token)).toBe(newKid);
    expect(kidOf(after.tokens.id_token)).toBe(newKid);
    const states = (await api.get('/keys')).body.data.map((k: { kid: string; state: string }) => [
      k.kid,
      k.state,
    ]);
    expect(states.sort()).toEqual(
      [
        [oldKid, 'retiring'],
        [newKid, 'signing'],
      ].sort(),
    );

    // The token signed by the old key still verifies, with jose against /oidc/keys and on the API.
    const keys = createLocalJWKSet((await server.client.get('/oidc/keys')).body);
    await expect(jwtVerify(before.tokens.access_token, keys)).resolves.toBeTruthy();
    await expect(jwtVerify(after.tokens.access_token, keys)).resolves.toBeTruthy();
    const me = await server.client.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${before.tokens.access_token}` },
    });
    expect(me.status).toBe(200);
    expect(
      (
        await server.client.get('/oidc/userinfo', {
          headers: { authorization: `Bearer ${after.tokens.access_token}` },
        })
      ).status,
    ).toBe(200);
  });

  test('only admins list or rotate keys', async () => {
    const user = await enrolledUpdbUser(server, api, 'not-a-key-admin');
    const headers = { 'svc-session': user.token };

    expect((await server.client.get('/edge/management/v1/keys', { headers })).status).toBe(403);
    expect((await server.client.post('/edge/management/v1/keys/rotate', { headers })).status).toBe(403);
    expect((await server.client.post('/edge/management/v1/keys/rotate')).status).toBe(401);
  });
});
