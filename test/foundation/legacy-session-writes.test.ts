import { afterAll, afterEach, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { useMovableClock } from '../helpers/movable-clock.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';

const TIMEOUT_MS = 10 * 60_000;

/**
 * Leaves out what each process reads on its own timers, not per request: the revocation catch-up
 * (every second), webhook delivery (every second) and the signing-key watcher (its poll lands in a
 * slow run on a busy machine).
 */
const perRequest = (statements: string[]) =>
  statements.filter(
    (sql) =>
      !sql.includes('"revocations"') &&
      !/\bwebhook_/.test(sql) &&
      !/^select \* from "signing_keys"/.test(sql),
  );
describe('a legacy svc-session request writes at most once a minute', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { SVC_EDGE_API_SESSION_TIMEOUT: '10m' } });
  });
  afterEach(() => {
    jest.useRealTimers();
  });
  afterAll(() => server.close());

  const storedExpiry = async (token: string): Promise<number> => {
    const row = await server.app
      .knex('api_sessions')
      .where({ token_hash: createHash('sha256').update(token).digest('hex') })
      .first('expires_at');
    return new Date(row.expires_at).getTime();
  };

  test('20 requests within a minute slide the expiry with one UPDATE, the headers state it, idleness still ends it', async () => {
    // The clock is moved so that the requests span most of a minute without waiting for it.
    useMovableClock();
    const start = Date.now();
    const login = await server.client.post('/edge/client/v1/authenticate?method=password', {
      body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
    });
    expect(login.status).toBe(200);
    const headers = { 'svc-session': login.body.data.token as string };

    const statements: string[] = [];
    const record = (q: { sql: string }) => statements.push(q.sql);
    const stated: string[] = [];
    let last = start;
    server.app.knex.on('query', record);
    try {
      for (let i = 0; i < 20; i++) {
        // First request a minute after login (its expiry is due to slide), then every 2.5 s.
        last = start + 61_000 + i * 2500;
        jest.setSystemTime(last);
        const res = await server.client.get('/edge/client/v1/current-api-session', { headers });
        expect(res.status).toBe(200);
        stated.push(res.header('expires-at')!);
      }
    } finally {
      server.app.knex.off('query', record);
    }
    const updates = statements.filter((sql) => /^\s*update\b/i.test(sql));
    expect(updates).toHaveLength(1);
    expect(updates[0]).toContain('"api_sessions"');

    // Every response stated the session's real (stored) expiry, which the one write set.
    const expiresAt = await storedExpiry(headers['svc-session']);
    // (The moved clock keeps ticking, so the first request ran a little after it was set.)
    expect(expiresAt).toBeGreaterThanOrEqual(start + 61_000 + TIMEOUT_MS);
    expect(expiresAt).toBeLessThan(start + 63_500 + TIMEOUT_MS);
    expect(stated.map((h) => new Date(h).getTime())).toEqual(Array(20).fill(expiresAt));

    // Unused for longer than the timeout: refused.
    jest.setSystemTime(last + TIMEOUT_MS + 1000);
    const expired = await server.client.get('/edge/client/v1/current-api-session', { headers });
    expect(expired.status).toBe(401);
    expect(expired.headerAll('www-authenticate')).toEqual([
      'svc-session realm="svc-session", error="expired", error_description="session expired"',
    ]);
  });
  test('once warm, a svc-session request reads nothing from the database (session, identity and policy come from memory)', async () => {
    const login = await server.client.post('/edge/client/v1/authenticate?method=password', {
      body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
    });
    expect(login.status).toBe(200);
    const headers = { 'svc-session': login.body.data.token as string };
    // Warm-up: the first request reads the session, the identity and its policy into memory.
    expect((await server.client.get('/edge/client/v1/current-api-session', { headers })).status).toBe(200);

    const statements: string[] = [];
    const record = (q: { sql: string }) => statements.push(q.sql);
    server.app.knex.on('query', record);
    try {
      for (let i = 0; i < 20; i++) {
        const res = await server.client.get('/edge/client/v1/current-api-session', { headers });
        expect(res.status).toBe(200);
      }
    } finally {
      server.app.knex.off('query', record);
    }
    expect(perRequest(statements)).toEqual([]);

    // Logout ends it at once, although it was served from memory.
    expect((await server.client.delete('/edge/client/v1/current-api-session', { headers })).status).toBe(200);
    const after = await server.client.get('/edge/client/v1/current-api-session', { headers });
    expect(after.status).toBe(401);
    expect(after.headerAll('www-authenticate')).toEqual([
      'svc-session realm="svc-session", error="invalid", error_description="session is invalid"',
    ]);
  });
});
