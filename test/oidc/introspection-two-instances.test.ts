import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import { passwordLogin } from '../helpers/oidc-client.js';
import { enrolledUpdbUser, managementApi } from '../identities/identity-fixtures.js';

const PATH = '/oidc/token/introspection';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Milliseconds until `check` holds, polling every 50 ms; fails the test after `deadlineMs`. */
async function msUntil(check: () => Promise<boolean>, deadlineMs = 5_000): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < deadlineMs) {
    if (await check()) return Date.now() - started;
    await sleep(50);
  }
  throw new Error(`not within ${deadlineMs} ms`);
}

// Two instances need a shared PostgreSQL; the embedded database serves one process only.
describeWithPostgres('token-introspection granted and removed on one instance, on the other', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startTestServer();
    b = await startTestServer({ databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  test('an admin grants it on A and B lets the caller in; removed on A, B refuses within a second', async () => {
    const api = managementApi(a, await a.adminToken());
    const rs = await enrolledUpdbUser(a, api, 'intro-two-rs');
    const { tokens } = await passwordLogin(b.client, rs.username, rs.password);
    const statusOnB = async () =>
      (
        await b.client.post(PATH, {
          form: { token: tokens.access_token },
          headers: { authorization: `Bearer ${tokens.access_token}` },
        })
      ).status;

    // B has the identity in memory from here on.
    const before = await statusOnB();
    expect(
      (await api.patch(`/identities/${rs.id}`, { body: { permissions: ['token-introspection'] } })).status,
    ).toBe(200);
    const toGrant = await msUntil(async () => (await statusOnB()) === 200);
    expect((await api.patch(`/identities/${rs.id}`, { body: { permissions: [] } })).status).toBe(200);
    const toRemove = await msUntil(async () => (await statusOnB()) === 403);

    expect(before).toBe(403);
    expect(toGrant).toBeLessThan(1_500);
    expect(toRemove).toBeLessThan(1_500);
  });
});
