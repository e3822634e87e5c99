import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import pg from 'pg';
import { createHttpsClient, type HttpsClient } from '../helpers/https-client.js';
import {
  exchangeCode,
  followToCallback,
  oidcLogin,
  refreshTokens,
  startAuthorization,
  submitLogin,
} from '../helpers/oidc-client.js';
import {
  startControllerPair,
  type ControllerPair,
  type SpawnedController,
} from '../helpers/spawn-controller.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import { waitFor } from '../helpers/wait-for.js';

// Each test starts controller processes (tsx, migrations, PKI): minutes, not seconds, on a
// loaded machine; waitListening's own deadline reports a start that never comes.
jest.setTimeout(240_000);

const ADMIN = { username: 'admin', password: 'admin-password-1' };
const MGMT = '/edge/management/v1';

// Several processes need a shared PostgreSQL; the embedded database serves one process only.
describeWithPostgres('two controller processes on one PostgreSQL database', () => {
  let pair: ControllerPair;
  let a: SpawnedController;
  let b: SpawnedController;
  let onA: HttpsClient;
  let onB: HttpsClient;
  let adminToken: string;

  beforeAll(async () => {
    pair = await startControllerPair();
    ({ a, b } = pair);
    onA = createHttpsClient(a.url, { ca: a.ca() });
    onB = createHttpsClient(b.url, { ca: b.ca() });
    const login = await onA.post(`${MGMT}/authenticate?method=password`, { body: ADMIN });
    adminToken = login.body.data.token;
  });

  afterAll(async () => {
    await Promise.all([onA?.close(), onB?.close()]);
    await pair?.close();
  });

  async function userWithPassword(name: string): Promise<{ id: string; password: string }> {
    const headers = { 'svc-session': adminToken };
    const created = await onA.post(`${MGMT}/identities`, {
      headers,
      body: { name, isAdmin: false, enrollment: { updb: name } },
    });
    const id = created.body.data.id as string;
    const detail = await onA.get(`${MGMT}/identities/${id}`, { headers });
    const password = `Pw-${name}-12345`;
    const enrolled = await onA.post(
      `/edge/client/v1/enroll/updb?token=${detail.body.data.enrollment.updb.token}`,
      {
        body: { password },
      },
    );
    expect(enrolled.status).toBe(200);
    return { id, password };
  }

  const me = (client: HttpsClient, accessToken: string) =>
    client.get('/edge/client/v1/current-identity', { headers: { authorization: `Bearer ${accessToken}` } });

  test('a login started on A is finished on B and its code exchanged on A', async () => {
    const user = await userWithPassword('hopper');
    const started = await startAuthorization(onA);
    const login = await submitLogin(onB, started, { body: { username: 'hopper', password: user.password } });
    const callback = await followToCallback(onB, login);
    const token = await exchangeCode(onA, { code: callback.code, verifier: started.pkce.verifier });
    expect(token.status).toBe(200);
    expect((await me(onA, token.body.access_token)).body.data.name).toBe('hopper');
    expect((await me(onB, token.body.access_token)).status).toBe(200);
  });

  // The one-second propagation bound is the catch-up poll's interval; these tests wait for the
  // revocation itself, since wall-clock bounds fail on a loaded machine without a fault.
  test('deleting the identity on B makes its access token fail on A', async () => {
    const user = await userWithPassword('lovelace');
    const { tokens } = await oidcLogin(onA, { body: { username: 'lovelace', password: user.password } });
    expect((await me(onA, tokens.access_token)).status).toBe(200);

    const deleted = await onB.delete(`${MGMT}/identities/${user.id}`, {
      headers: { 'svc-session': adminToken },
    });
    expect(deleted.status).toBe(200);
    await waitFor(async () => (await me(onA, tokens.access_token)).status === 401, {
      timeout: 15_000,
      what: 'the revocation on the other process',
    });
    const refused = await me(onA, tokens.access_token);
    expect(refused.header('www-authenticate')).toBe(
      'Bearer realm="svc-oidc", error="invalid", error_description="token is invalid"',
    );
  });

  test('a refresh token replayed on A revokes the session on B', async () => {
    const user = await userWithPassword('turing');
    const { tokens } = await oidcLogin(onB, { body: { username: 'turing', password: user.password } });
    // Behind one address, as replicas are: each process serves the other's address too, and a
    // refresh token is redeemed only at the issuer of its login, B's.
    const onAasB = { host: new URL(b.url).host };
    const rotated = await refreshTokens(onA, tokens.refresh_token!, onAasB);
    expect(rotated.status).toBe(200);
    const replay = await refreshTokens(onA, tokens.refresh_token!, onAasB);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    await waitFor(async () => (await me(onB, rotated.body.access_token)).status === 401, {
      timeout: 15_000,
      what: 'the revocation on the other process',
    });
    expect((await refreshTokens(onB, rotated.body.refresh_token)).status).toBe(400);
  });

  // B serves legacy sessions from memory; only the change feed tells it that one has ended.
  const legacyLogin = async (client: HttpsClient, username: string, password: string) => {
    const login = await client.post('/edge/client/v1/authenticate?method=password', {
      body: { username, password },
    });
    expect(login.status).toBe(200);
    return { 'svc-session': login.body.data.token as string };
  };
  const currentSession = (client: HttpsClient, headers: Record<string, string>) =>
    client.get('/edge/client/v1/current-api-session', { headers });
  const SESSION_INVALID =
    'svc-session realm="svc-session", error="invalid", error_description="session is invalid"';

  test('a legacy session logged out on A is refused on B', async () => {
    const user = await userWithPassword('hollerith');
    const headers = await legacyLogin(onA, 'hollerith', user.password);
    for (let i = 0; i < 3; i++) expect((await currentSession(onB, headers)).status).toBe(200);

    expect((await onA.delete('/edge/client/v1/current-api-session', { headers })).status).toBe(200);
    await waitFor(async () => (await currentSession(onB, headers)).status === 401, {
      timeout: 15_000,
      what: 'the logout on the other process',
    });
    expect((await currentSession(onB, headers)).header('www-authenticate')).toBe(SESSION_INVALID);
  });

  test("a privilege change on A ends the identity's legacy sessions on B", async () => {
    const user = await userWithPassword('babbage');
    const headers = await legacyLogin(onB, 'babbage', user.password);
    for (let i = 0; i < 3; i++) expect((await currentSession(onB, headers)).status).toBe(200);

    // Still enabled afterwards: only the ended session, not the identity's standing, refuses it.
    const promoted = await onA.patch(`${MGMT}/identities/${user.id}`, {
      headers: { 'svc-session': adminToken },
      body: { isAdmin: true },
    });
    expect(promoted.status).toBe(200);
    await waitFor(async () => (await currentSession(onB, headers)).status === 401, {
      timeout: 15_000,
      what: 'the revocation on the other process',
    });
    expect((await currentSession(onB, headers)).header('www-authenticate')).toBe(SESSION_INVALID);
    const again = await legacyLogin(onB, 'babbage', user.password);
    expect((await currentSession(onB, again)).body.data.isAdmin).toBe(true);
  });

  test("cutting B's listener connection loses no revocation", async () => {
    const user = await userWithPassword('hamilton');
    const { tokens } = await oidcLogin(onA, { body: { username: 'hamilton', password: user.password } });
    expect((await me(onB, tokens.access_token)).status).toBe(200);
    const admin = new pg.Client({ connectionString: pair.dbUrl });
    await admin.connect();
    // Every LISTEN connection of both processes goes; the one-second catch-up read must cover.
    const cut = await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
    );
    await admin.end();
    expect(cut.rowCount).toBeGreaterThanOrEqual(2);
    const disabled = await onA.post(`${MGMT}/identities/${user.id}/disable`, {
      headers: { 'svc-session': adminToken },
      body: { durationMinutes: 0 },
    });
    expect(disabled.status).toBe(200);
    await waitFor(async () => (await me(onB, tokens.access_token)).status === 401, {
      timeout: 15_000,
      what: 'the revocation on the other process',
    });
  });
});
