import { afterAll, afterEach, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { useMovableClock } from '../helpers/movable-clock.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';

const MINUTE = 60_000;
const CURRENT = '/edge/client/v1/current-api-session';

describe('a legacy svc-session ends at the longest session duration however busy it is', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      env: { SVC_EDGE_API_SESSION_TIMEOUT: '10m', SVC_EDGE_OIDC_MAX_SESSION_DURATION: '1h' },
    });
  });
  afterEach(() => {
    jest.useRealTimers();
  });
  afterAll(() => server.close());

  async function login(): Promise<{ headers: Record<string, string>; createdAt: number }> {
    const before = Date.now();
    const res = await server.client.post('/edge/client/v1/authenticate?method=password', {
      body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
    });
    expect(res.status).toBe(200);
    return { headers: { 'svc-session': res.body.data.token as string }, createdAt: before };
  }

  test('used every 9 minutes it still ends an hour after login; the stated expiry never passes that hour', async () => {
    // The clock is moved, not waited for (test/helpers/movable-clock.ts).
    useMovableClock();
    const { headers, createdAt } = await login();
    const statedAt: number[] = [];

    for (let minutes = 9; minutes <= 54; minutes += 9) {
      jest.setSystemTime(createdAt + minutes * MINUTE);
      const res = await server.client.get(CURRENT, { headers });
      expect(res.status).toBe(200);
      statedAt.push(new Date(res.header('expires-at')!).getTime());
    }
    jest.setSystemTime(createdAt + 59 * MINUTE);
    const lastMinute = await server.client.get(CURRENT, { headers });
    jest.setSystemTime(createdAt + 60 * MINUTE + 5000);
    const afterTheHour = await server.client.get(CURRENT, { headers });

    // Slid with use up to 45 minutes (9 + 36 minutes idle allowed), then held at the hour.
    const end = statedAt.at(-1)!;
    expect(end).toBeGreaterThanOrEqual(createdAt + 60 * MINUTE);
    expect(end).toBeLessThan(createdAt + 60 * MINUTE + 5000);
    expect(statedAt[3]).toBeLessThan(end);
    expect(lastMinute.status).toBe(200);
    expect(new Date(lastMinute.header('expires-at')!).getTime()).toBe(end);
    expect(new Date(lastMinute.body.data.expiresAt).getTime()).toBe(end);
    expect(lastMinute.body.data.expirationSeconds).toBeLessThanOrEqual(60);
    expect(Number(lastMinute.header('expiration-seconds'))).toBeLessThanOrEqual(60);
    expect(afterTheHour.status).toBe(401);
    expect(afterTheHour.headerAll('www-authenticate')).toEqual([
      'svc-session realm="svc-session", error="expired", error_description="session expired"',
    ]);
  });

  test('a session created before the ceiling existed (a later stored expiry) is shown and ended at it', async () => {
    useMovableClock();
    const { headers, createdAt } = await login();
    // As a row written by a version that slid the expiry without a ceiling could be.
    await server.app
      .knex('api_sessions')
      .where({
        token_hash: (await import('node:crypto'))
          .createHash('sha256')
          .update(headers['svc-session']!)
          .digest('hex'),
      })
      .update({ expires_at: new Date(createdAt + 65 * MINUTE) });

    jest.setSystemTime(createdAt + 58 * MINUTE);
    const before = await server.client.get(CURRENT, { headers });
    jest.setSystemTime(createdAt + 60 * MINUTE + 5000);
    const after = await server.client.get(CURRENT, { headers });

    expect(before.status).toBe(200);
    expect(new Date(before.header('expires-at')!).getTime()).toBeLessThan(createdAt + 60 * MINUTE + 5000);
    expect(after.status).toBe(401);
  });
});
