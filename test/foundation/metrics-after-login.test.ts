import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oc from 'openid-client';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { testWithPostgres, usingPostgres } from '../helpers/test-database.js';
import { waitFor } from '../helpers/wait-for.js';
import { discoverClient, issuerOf } from '../oidc/oidc-fixtures.js';

/** The value of one sample line of the exposition, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('/metrics after a real relying party logs in and refreshes', () => {
  let server: TestServer;
  let text: string;
  beforeAll(async () => {
    server = await startTestServer();
    const { config, close } = await discoverClient(server, issuerOf(server));
    try {
      const verifier = oc.randomPKCECodeVerifier();
      const state = oc.randomState();
      const url = oc.buildAuthorizationUrl(config, {
        redirect_uri: 'http://127.0.0.1:43210/auth/callback',
        scope: 'openid offline_access',
        code_challenge: await oc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        method: 'password',
      });
      const start = await server.client.get(url.pathname + url.search);
      const loginPage = new URL(start.header('location')!, server.url);
      const wrong = await server.client.post(loginPage.pathname, {
        body: {
          authRequestId: loginPage.searchParams.get('authRequestID'),
          username: ADMIN_USERNAME,
          password: 'nope',
        },
      });
      expect(wrong.status).toBe(401);
      const login = await server.client.post(loginPage.pathname, {
        body: {
          authRequestId: loginPage.searchParams.get('authRequestID'),
          username: ADMIN_USERNAME,
          password: ADMIN_PASSWORD,
        },
      });
      expect(login.status).toBe(303);
      const tokens = await oc.authorizationCodeGrant(config, new URL(login.header('location')!), {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
      await oc.refreshTokenGrant(config, tokens.refresh_token!);
      // The first refresh token was rotated away: using it again is a refused grant.
      await expect(oc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toThrow();
    } finally {
      await close();
    }
    text = (await server.client.get('/metrics')).text;
  });
  afterAll(() => server.close());

  test('the login page counts its refused and its accepted password by method and outcome', () => {
    expect(sample(text, 'svc_logins_total{method="password",outcome="failure"}')).toBe(1);
    expect(sample(text, 'svc_logins_total{method="password",outcome="success"}')).toBe(1);
  });

  test('token grants are counted by type and outcome', () => {
    expect(sample(text, 'svc_token_grants_total{grant_type="authorization_code",outcome="success"}')).toBe(1);
    expect(sample(text, 'svc_token_grants_total{grant_type="refresh_token",outcome="success"}')).toBe(1);
    expect(sample(text, 'svc_token_grants_total{grant_type="refresh_token",outcome="failure"}')).toBe(1);
  });

  test('the HTTP series name the token endpoint and the login step by template', () => {
    expect(
      sample(
        text,
        'svc_http_requests_total{listener="default",method="POST",route="/oidc/token",status="200"}',
      ),
    ).toBe(2);
    expect(
      sample(
        text,
        'svc_http_requests_total{listener="default",method="POST",route="/oidc/login/username",status="303"}',
      ),
    ).toBe(1);
  });

  test('each Argon2id verification is timed, the failed one too', () => {
    expect(sample(text, 'svc_password_verify_seconds_count')).toBe(2);
    expect(sample(text, 'svc_password_verify_seconds_sum')).toBeGreaterThan(0);
  });

  test('database query times and the pool are exposed', () => {
    expect(sample(text, 'svc_db_query_duration_seconds_count')).toBeGreaterThan(10);
    expect(sample(text, 'svc_db_pool_connections_in_use')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'svc_db_pool_connections_idle')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'svc_db_pool_acquires_waiting')).toBe(0);
  });

  test('the audit-derived series and the process series are declared', () => {
    for (const name of [
      'svc_logins_total',
      'svc_second_factors_total',
      'svc_revocations_published_total',
      'svc_revocations_received_total',
      'svc_key_rotations_total',
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
    ])
      expect(text).toContain(`# TYPE ${name} `);
  });

  test('every series the shipped Grafana dashboard queries is exposed', () => {
    const dashboard = JSON.parse(readFileSync('docs/grafana-dashboard.json', 'utf8')) as {
      panels: { targets?: { expr: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
    const names = new Set(exprs.flatMap((e) => e.match(/\b(?:svc|process|nodejs)_[a-z0-9_]+/g) ?? []));
    const declared = (name: string) =>
      [name, name.replace(/_(bucket|sum|count)$/, '')].some((n) => text.includes(`# TYPE ${n} `));
    // The embedded database has no LISTEN connection, hence no gauge for it.
    const expected = [...names].filter((n) => usingPostgres || n !== 'svc_revocation_listener_connected');
    expect(expected.length).toBeGreaterThan(10);
    expect(expected.filter((n) => !declared(n))).toEqual([]);
  });

  testWithPostgres(
    'the LISTEN connection of the revocation feed is a gauge that follows the connection',
    async () => {
      const gauge = async () =>
        sample((await server.client.get('/metrics')).text, 'svc_revocation_listener_connected');
      const until = (want: number, what: string) =>
        waitFor(async () => (await gauge()) === want, { timeout: 60_000, what });
      await until(1, 'the listener to connect');

      const database = new URL(server.databaseUrl!).pathname.slice(1);
      const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await admin.connect();
      try {
        // No new connection may open until allowed again: the listener stays down meanwhile.
        await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
        await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = $1 AND query = 'LISTEN svc_revocations'`,
          [database],
        );
        await until(0, 'the gauge to show the listener down');
      } finally {
        await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
        await admin.end();
      }
      await until(1, 'the listener to reconnect');
    },
    180_000,
  );
});
