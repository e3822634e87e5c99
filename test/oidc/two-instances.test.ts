import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { decodeProtectedHeader } from 'jose';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import {
  exchangeCode,
  followToCallback,
  passwordLogin,
  startAuthorization,
  submitLogin,
} from '../helpers/oidc-client.js';
import { enrolledUpdbUser, managementApi } from '../identities/identity-fixtures.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until `check` holds or the deadline passes (instances pick up keys every few seconds). */
async function eventually(check: () => Promise<boolean>, deadlineMs = 15_000): Promise<boolean> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    if (await check()) return true;
    await sleep(250);
  }
  return false;
}

// Two instances need a shared PostgreSQL; the embedded database serves one process only.
describeWithPostgres('two instances on one database share and rotate the keys', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    const env = { SVC_EDGE_OIDC_KEY_ROTATION_GRACE: '4s' };
    a = await startTestServer({ env });
    // B also serves A's address as an issuer, as instances of one deployment share their addresses.
    const portA = new URL(a.url).port;
    b = await startTestServer({
      env,
      databaseUrl: a.databaseUrl,
      overrides: (tree) => {
        tree.web = [
          {
            name: 'b',
            bindPoints: [
              { interface: '127.0.0.1:0', address: '127.0.0.1:0' },
              { interface: '127.0.0.1:0', address: `127.0.0.1:${portA}` },
            ],
            apis: [{ binding: 'edge-client' }, { binding: 'edge-management' }],
          },
        ];
      },
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const kids = async (s: TestServer) =>
    ((await s.client.get('/oidc/keys')).body.keys as { kid: string }[]).map((k) => k.kid).sort();

  test('both publish the one key created by the first, and accept the tokens of the other', async () => {
    const fromA = await passwordLogin(a.client, ADMIN_USERNAME, ADMIN_PASSWORD);

    const onB = await b.client.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${fromA.tokens.access_token}` },
    });

    expect(await kids(a)).toEqual(await kids(b));
    expect(await kids(a)).toHaveLength(1);
    expect(onB.status).toBe(200);
  });

  test('a login started on one instance is finished on the other, for the issuer it started with', async () => {
    const started = await startAuthorization(a.client);

    const login = await submitLogin(b.client, started, {
      body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
    });
    const callback = await followToCallback(b.client, login);
    const token = await exchangeCode(a.client, { code: callback.code, verifier: started.pkce.verifier });

    expect(callback.iss).toBe(`${a.url}/oidc`);
    expect(token.status).toBe(200);
  });

  test('a rename on one instance shows at once there and, once its event arrives, on the other; tokens keep working', async () => {
    const api = managementApi(a, await a.adminToken());
    const user = await enrolledUpdbUser(a, api, 'two-instances-rename');
    const { tokens } = await passwordLogin(a.client, user.username, user.password);
    const headers = { authorization: `Bearer ${tokens.access_token}` };
    const nameOn = async (s: TestServer) => {
      const res = await s.client.get('/edge/client/v1/current-api-session', { headers });
      return res.status === 200 ? (res.body.data.identity.name as string) : `status ${res.status}`;
    };
    const userinfoOn = async (s: TestServer) => (await s.client.get('/oidc/userinfo', { headers })).body.name;
    // Both instances cache the identity's facts.
    expect([await nameOn(a), await nameOn(b)]).toEqual(['two-instances-rename', 'two-instances-rename']);

    const renamed = await api.patch(`/identities/${user.id}`, { body: { name: 'two-instances-renamed' } });

    expect(renamed.status).toBe(200);
    expect(await nameOn(a)).toBe('two-instances-renamed');
    // B learns of it by NOTIFY or its catch-up read (each second), far before its cache would expire.
    expect(await eventually(async () => (await nameOn(b)) === 'two-instances-renamed', 5_000)).toBe(true);
    expect(await userinfoOn(b)).toBe('two-instances-renamed');
  });

  test('a rotation on one instance is published and then used for signing by the other; old tokens stay valid', async () => {
    const before = await passwordLogin(a.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const rotated = await managementApi(a, await a.adminToken()).post('/keys/rotate');
    const newKid = rotated.body.data.kid as string;

    const publishedOnB = await eventually(async () => (await kids(b)).includes(newKid));
    // Signing starts after the 4 s grace plus B's next reload: poll for that, with room for both.
    const signedOnB = await eventually(async () => {
      const { tokens } = await passwordLogin(b.client, ADMIN_USERNAME, ADMIN_PASSWORD);
      return decodeProtectedHeader(tokens.access_token).kid === newKid;
    }, 30_000);
    const oldTokenOnB = await b.client.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${before.tokens.access_token}` },
    });

    expect(rotated.status).toBe(200);
    expect(publishedOnB).toBe(true);
    expect(signedOnB).toBe(true);
    expect(oldTokenOnB.status).toBe(200);
  });
});
