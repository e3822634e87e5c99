import { afterEach, describe, expect, jest, test } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import pg from 'pg';
import { createHttpsClient } from '../helpers/https-client.js';
import { spawnController, waitListening, type SpawnedController } from '../helpers/spawn-controller.js';
import { createTestDatabaseUrl, describeWithPostgres } from '../helpers/test-database.js';
import { startTestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

// Each test starts controller processes (tsx, migrations, PKI): minutes, not seconds, on a
// loaded machine; waitListening's own deadline reports a start that never comes.
jest.setTimeout(240_000);

const running: SpawnedController[] = [];
afterEach(async () => {
  for (const c of running.splice(0)) {
    if (c.child.exitCode === null) c.child.kill('SIGKILL');
    await c.exited;
  }
});
const tempDir = () => mkdtempSync(join(tmpdir(), 'svc-proc-'));

async function start(env: Record<string, string>): Promise<SpawnedController> {
  const c = await spawnController(env);
  running.push(c);
  return c;
}

describe('the controller process', () => {
  test('SIGTERM lets an in-flight request finish, refuses new connections and exits 0', async () => {
    const dataDir = tempDir();
    const c = await start({ SVC_DATA_DIR: dataDir });
    await waitListening(c);
    // A request whose body is still arriving when the signal comes.
    const socket = connect({ host: '127.0.0.1', port: c.port, ca: c.ca(), servername: 'localhost' });
    await new Promise<void>((r) => socket.once('secureConnect', () => r()));
    const body = JSON.stringify({ username: 'admin', password: 'admin-password-1' });
    let response = '';
    socket.on('data', (d) => (response += d));
    // `Expect: 100-continue` makes the server say when it has the request in hand (RFC 9110
    // §10.1.1), so the signal is sent after that event instead of after a guessed pause.
    socket.write(
      `POST /edge/management/v1/authenticate?method=password HTTP/1.1\r\nHost: localhost:${c.port}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n` +
        `Connection: close\r\n\r\n${body.slice(0, 10)}`,
    );
    await waitFor(() => response.includes('100 Continue'), { what: 'the server to take the request' });
    c.child.kill('SIGTERM');
    await waitFor(() => c.output().includes('stopping: finishing in-flight requests'), { what: 'the stop' });
    const attempt = () =>
      new Promise<string>((resolve) => {
        const late = connect({ host: '127.0.0.1', port: c.port, ca: c.ca(), servername: 'localhost' });
        late.once('secureConnect', () => {
          late.destroy();
          resolve('connected');
        });
        late.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
      });
    const refused = await waitFor(async () => (await attempt()) === 'ECONNREFUSED', {
      interval: 100,
      what: 'new connections to be refused',
    });
    expect(refused).toBe(true);
    socket.write(body.slice(10));
    await new Promise<void>((r) => socket.once('end', () => r()));
    expect(response).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK/);
    expect(response).toContain('"token"');
    expect(await c.exited).toBe(0);
    expect(c.output()).toContain('stopping: finishing in-flight requests');
  });

  test('SIGTERM during start-up: the start completes, then the controller stops cleanly and frees its data directory', async () => {
    const dataDir = tempDir();
    const c = await start({ SVC_DATA_DIR: dataDir });
    await waitFor(() => c.output().includes('listeners bound'), {
      timeout: 180_000,
      what: 'the ports to be bound',
    });
    c.child.kill('SIGTERM');
    expect(await c.exited).toBe(0);
    expect(c.output()).toContain('stopping: finishing in-flight requests');
    expect(c.output()).toContain('"msg":"stopped"');
    // The data-directory lock went with the clean stop: the next start on it succeeds.
    const next = await start({ SVC_DATA_DIR: dataDir });
    await waitListening(next);
  });

  test('a second process on the same embedded database is refused with a clear message', async () => {
    const dataDir = tempDir();
    const first = await start({ SVC_DATA_DIR: dataDir });
    await waitListening(first);
    const second = await start({ SVC_DATA_DIR: dataDir });
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(/the embedded database in .* is in use by process \d+/);
  });

  test('a bad configuration value stops the start with one line naming the key', async () => {
    const c = await start({ SVC_DATA_DIR: tempDir(), SVC_OIDC_REFRESH_TOKEN_DURATION: 'forever' });
    expect(await c.exited).toBe(2);
    // oidc-provider may warn about the Node version on stderr; our own message is one line.
    expect(
      c
        .output()
        .split('\n')
        .filter((l) => l.includes('invalid configuration')),
    ).toEqual([
      'invalid configuration: edge.oidc.refreshTokenDuration (SVC_OIDC_REFRESH_TOKEN_DURATION): "forever" is not a duration (e.g. 90s, 30m, 24h)',
    ]);
  });

  test('a master key that cannot decrypt the database refuses to start', async () => {
    const dataDir = tempDir();
    const first = await start({ SVC_DATA_DIR: dataDir });
    await waitListening(first);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const other = await start({
      SVC_DATA_DIR: dataDir,
      SVC_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
    });
    expect(await other.exited).toBe(1);
    expect(other.output()).toContain('the master key cannot decrypt the secrets in this database');
  });
});

describeWithPostgres('several processes on one PostgreSQL database', () => {
  test('two processes started at once on an empty database both come up; migrations ran once', async () => {
    const db = (await createTestDatabaseUrl())!;
    try {
      const env = (dir: string) => ({ SVC_DATA_DIR: dir, DATABASE_URL: db.url });
      const [a, b] = await Promise.all([start(env(tempDir())), start(env(tempDir()))]);
      await Promise.all([waitListening(a), waitListening(b)]);
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      const migrations = await client.query('select name from knex_migrations order by id');
      const admins = await client.query('select count(*)::int as n from identities where is_admin');
      const roots = await client.query("select count(*)::int as n from secrets where name = 'pki.root'");
      await client.end();
      expect(migrations.rows.map((r) => r.name)).toEqual([
        '001_foundation',
        '002_mfa',
        '003_oidc',
        '004_account_index_and_login_shadow',
        '005_ca_identity_name_format',
        '006_hashed_oidc_payload_ids',
        '007_sealed_enrollment_tokens',
        '008_login_failures_per_address',
        '009_identity_list_indexes',
        '010_rate_limits',
        '011_instance_locks',
        '012_certificate_identity',
        '013_signer_token_lifetime',
        '014_mfa_enrollment_owner',
        '015_api_session_origin',
        '016_identity_permissions',
        '017_policy_session_limit',
        '018_policy_bind_tokens',
        '019_device_flow',
        '020_passkeys',
        '021_account_sessions',
        '022_audit_events',
        '023_webhooks',
        '024_webhook_delivery_due_index',
        '025_compatibility_level',
      ]);
      expect(admins.rows[0].n).toBe(1);
      expect(roots.rows[0].n).toBe(1);
      // Both serve the same PKI: a session made on one works on the other.
      const ca = a.ca();
      const ca2 = b.ca();
      expect(ca2).toBe(ca);
      const ca1 = createHttpsClient(a.url, { ca });
      const cb = createHttpsClient(b.url, { ca });
      const login = await ca1.post('/edge/management/v1/authenticate?method=password', {
        body: { username: 'admin', password: 'admin-password-1' },
      });
      const me = await cb.get('/edge/management/v1/current-identity', {
        headers: { 'svc-session': login.body.data.token },
      });
      expect(me.status).toBe(200);
      await Promise.all([ca1.close(), cb.close()]);
      for (const c of [a, b]) c.child.kill('SIGTERM');
      expect(await a.exited).toBe(0);
      expect(await b.exited).toBe(0);
    } finally {
      await db.drop();
    }
  });
});

describe('readiness', () => {
  test('/health/ready answers 503 while the database does not answer', async () => {
    const server = await startTestServer();
    try {
      expect((await server.client.get('/health/ready')).status).toBe(200);
      await server.app.knex.destroy();
      const res = await server.client.get('/health/ready');
      expect(res.status).toBe(503);
      expect((await server.client.get('/health/live')).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
