import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

describe('rate limits, CORS and metrics', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      env: {
        SVC_RATE_LIMITS_ENABLED: 'true',
        SVC_RATE_LIMITS_PER_SECOND: '1',
        SVC_RATE_LIMITS_BURST: '3',
        SVC_CORS_ORIGINS: 'https://console.example.com',
      },
    });
  });
  afterAll(() => server.close());

  test('logins beyond the burst from one address get 429 with Retry-After', async () => {
    const attempt = () =>
      server.client.post('/edge/client/v1/authenticate?method=password', {
        body: { username: 'x', password: 'y' },
      });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await attempt()).status);
    expect(statuses.slice(0, 3)).toEqual([401, 401, 401]);
    expect(statuses[4]).toBe(429);
    const limited = await attempt();
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(Number(limited.header('retry-after'))).toBeGreaterThanOrEqual(1);
    // Other endpoints are not limited.
    expect((await server.client.get('/health/live')).status).toBe(200);
  });

  test('allowed origins get CORS headers on the edge APIs, others get none', async () => {
    const preflight = await server.client.request('OPTIONS', '/edge/client/v1/current-identity', {
      headers: { origin: 'http://localhost:4200', 'access-control-request-method': 'GET' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.header('access-control-allow-origin')).toBe('http://localhost:4200');
    expect(preflight.header('access-control-allow-headers')).toContain('svc-session');

    const simple = await server.client.get('/edge/client/v1/current-identity', {
      headers: { origin: 'https://console.example.com' },
    });
    expect(simple.status).toBe(401);
    expect(simple.header('access-control-allow-origin')).toBe('https://console.example.com');
    expect(simple.header('access-control-expose-headers')).toBe(
      'expiration-seconds, expires-at, www-authenticate',
    );

    const foreign = await server.client.get('/edge/client/v1/current-identity', {
      headers: { origin: 'https://evil.example' },
    });
    expect(foreign.header('access-control-allow-origin')).toBeUndefined();

    // A single-page app on an allowed origin calls the token and userinfo endpoints itself.
    const tokenPreflight = await server.client.request('OPTIONS', '/oidc/token', {
      headers: {
        origin: 'http://localhost:4200',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(tokenPreflight.status).toBe(204);
    expect(tokenPreflight.header('access-control-allow-origin')).toBe('http://localhost:4200');
    expect(tokenPreflight.header('access-control-allow-methods')).toContain('POST');
    const userinfo = await server.client.get('/oidc/userinfo', {
      headers: { origin: 'http://localhost:4200', authorization: 'Bearer not-a-token' },
    });
    expect(userinfo.status).toBe(401);
    expect(userinfo.header('access-control-allow-origin')).toBe('http://localhost:4200');
    expect(userinfo.header('access-control-expose-headers')).toContain('www-authenticate');
    const foreignToken = await server.client.request('OPTIONS', '/oidc/token', {
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(foreignToken.header('access-control-allow-origin')).toBeUndefined();

    const page = await server.client.request('OPTIONS', '/oidc/login/username', {
      headers: { origin: 'http://localhost:4200', 'access-control-request-method': 'POST' },
    });
    expect(page.header('access-control-allow-origin')).toBeUndefined();
  });

  test('every answer is no-store, unframeable, unsniffable and HTTPS only', async () => {
    for (const res of [
      await server.client.get('/health/live'),
      await server.client.get('/edge/client/v1/current-identity'),
      await server.client.get('/no/such/path'),
    ]) {
      expect(res.header('cache-control')).toBe('no-store');
      expect(res.header('strict-transport-security')).toBe('max-age=31536000');
      expect(res.header('x-content-type-options')).toBe('nosniff');
      expect(res.header('x-frame-options')).toBe('DENY');
      expect(res.header('referrer-policy')).toBe('no-referrer');
      expect(res.header('x-powered-by')).toBeUndefined();
    }
  });

  test('metrics count requests without putting ids in labels', async () => {
    await server.client.get('/edge/management/v1/identities/some-secret-id');
    const res = await server.client.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.text).toMatch(
      /svc_http_requests_total\{listener="default",method="GET",route="\/health\/live",status="200"\} \d+/,
    );
    expect(res.text).toContain('route="/edge/management/v1/identities/:id"');
    expect(res.text).not.toContain('some-secret-id');
    expect(res.text).toMatch(/process_resident_memory_bytes \d+/);
  });
});
