import { afterAll, afterEach, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { useMovableClock } from '../helpers/movable-clock.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';

describe('admin login and legacy sessions', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { SVC_EDGE_API_SESSION_TIMEOUT: '3s' } });
  });
  afterEach(() => {
    jest.useRealTimers();
  });
  afterAll(() => server.close());

  const login = (username: string, password: string, api = 'management') =>
    server.client.post(`/edge/${api}/v1/authenticate?method=password`, { body: { username, password } });

  test('the bootstrap admin authenticates and reads current-identity with the session token', async () => {
    const res = await login(ADMIN_USERNAME, ADMIN_PASSWORD);
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(data).toMatchObject({
      identity: { name: ADMIN_USERNAME },
      isMfaRequired: false,
      isMfaComplete: false,
      authQueries: [],
    });
    expect(typeof data.token).toBe('string');
    expect(data.expirationSeconds).toBeGreaterThan(0);

    const me = await server.client.get('/edge/client/v1/current-identity', {
      headers: { 'svc-session': data.token },
    });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({
      id: data.identityId,
      name: ADMIN_USERNAME,
      isAdmin: true,
      isDefaultAdmin: true,
    });
    expect(me.body.data.authenticators.updb.username).toBe(ADMIN_USERNAME);
  });

  test('expiration-seconds and expires-at (RFC 3339) state the real expiry of the session', async () => {
    const token = (await login(ADMIN_USERNAME, ADMIN_PASSWORD, 'client')).body.data.token;

    const before = Date.now();
    const me = await server.client.get('/edge/client/v1/current-identity', {
      headers: { 'svc-session': token },
    });
    const after = Date.now();

    expect(me.status).toBe(200);
    const row = await server.app
      .knex('api_sessions')
      .where({ token_hash: createHash('sha256').update(token).digest('hex') })
      .first('expires_at');
    const expiresAt = new Date(row.expires_at).getTime();
    const header = me.header('expires-at')!;
    expect(header).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
    expect(new Date(header).getTime()).toBe(expiresAt);
    // Counted down from some instant while the request was being served.
    const seconds = Number(me.header('expiration-seconds'));
    expect(Number.isInteger(seconds)).toBe(true);
    expect(seconds).toBeGreaterThanOrEqual(Math.floor((expiresAt - after) / 1000));
    expect(seconds).toBeLessThanOrEqual(Math.floor((expiresAt - before) / 1000));
  });

  test('a wrong password and an unknown username get the same 401 body', async () => {
    const wrong = await login(ADMIN_USERNAME, 'not-the-password');
    const unknown = await login('nobody-by-this-name', 'not-the-password');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const strip = (b: any) => ({ ...b, error: { ...b.error, requestId: undefined } });
    expect(strip(wrong.body)).toEqual(strip(unknown.body));
    expect(wrong.body.error.code).toBe('INVALID_AUTH');
  });

  test('a request without credentials gets both missing challenges', async () => {
    const res = await server.client.get('/edge/management/v1/current-identity');
    expect(res.status).toBe(401);
    expect(res.headerAll('www-authenticate')).toEqual([
      'svc-session realm="svc-session", error="missing", error_description="no matching token was provided"',
      'Bearer realm="svc-oidc", error="missing", error_description="no matching token was provided"',
    ]);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
    expect(res.header('expiration-seconds')).toBeUndefined();
  });

  test('an unknown session token gets the svc-session invalid challenge', async () => {
    const res = await server.client.get('/edge/client/v1/current-identity', {
      headers: { 'svc-session': 'bogus' },
    });
    expect(res.status).toBe(401);
    expect(res.headerAll('www-authenticate')).toEqual([
      'svc-session realm="svc-session", error="invalid", error_description="session is invalid"',
    ]);
  });

  test('a session slides while used and expires after the timeout without use', async () => {
    // The clock is moved rather than slept on: a loaded machine cannot stretch a 1.5 s pause past
    // the 3 s timeout, and the test does not wait for seconds. Only Date is faked (timers stay real).
    useMovableClock();
    const start = Date.now();
    const token = (await login(ADMIN_USERNAME, ADMIN_PASSWORD, 'client')).body.data.token;
    const headers = { 'svc-session': token };
    for (let i = 1; i <= 3; i++) {
      jest.setSystemTime(start + i * 2500);
      expect((await server.client.get('/edge/client/v1/current-api-session', { headers })).status).toBe(200);
    }
    jest.setSystemTime(start + 3 * 2500 + 3100);
    const expired = await server.client.get('/edge/client/v1/current-api-session', { headers });
    expect(expired.status).toBe(401);
    expect(expired.headerAll('www-authenticate')).toEqual([
      'svc-session realm="svc-session", error="expired", error_description="session expired"',
    ]);
  });

  test('deleting the current API session ends it', async () => {
    const token = (await login(ADMIN_USERNAME, ADMIN_PASSWORD, 'client')).body.data.token;
    const headers = { 'svc-session': token };
    const current = await server.client.get('/edge/client/v1/current-api-session', { headers });
    expect(current.body.data.identity.name).toBe(ADMIN_USERNAME);
    expect((await server.client.delete('/edge/client/v1/current-api-session', { headers })).status).toBe(200);
    expect((await server.client.get('/edge/client/v1/current-identity', { headers })).status).toBe(401);
  });
});
