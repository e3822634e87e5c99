import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { passwordLogin } from '../helpers/oidc-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';

const random = () => randomBytes(6).toString('hex');

describe('metric series are labelled by route template, never by the raw path', () => {
  let server: TestServer;
  const logLines: { msg?: string; method?: string; path?: string; status?: number }[] = [];
  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line)) });
    server = await startTestServer({ logger });
  });
  afterAll(() => server.close());

  const seriesIn = (text: string) => text.split('\n').filter((l) => l.startsWith('svc_http_requests_total{'));

  test('random paths and ids add a small constant number of series', async () => {
    const before = seriesIn((await server.client.get('/metrics')).text);
    const token = await server.adminToken();
    const paths = [
      (s: string) => `/${s}`,
      (s: string) => `/edge/management/v1/${s}`,
      (s: string) => `/edge/client/v1/${s}/x`,
      (s: string) => `/oidc/${s}`,
      (s: string) => `/health/${s}`,
    ];

    const sent: string[] = [];
    for (let i = 0; i < 80; i++) {
      const s = random();
      sent.push(s);
      const res = await server.client.request(i % 2 ? 'GET' : 'POST', paths[i % paths.length]!(s));
      expect(res.status).toBe(404);
    }
    for (let i = 0; i < 20; i++) {
      const id = random();
      sent.push(id);
      const res = await server.client.get(`/edge/management/v1/identities/${id}`, {
        headers: i % 2 ? { 'svc-session': token } : {},
      });
      expect([401, 404]).toContain(res.status);
    }
    const metrics = await server.client.get('/metrics');
    const after = seriesIn(metrics.text);

    // 404 unmatched (GET, POST), identities/:id (401, 404), /metrics, the admin login.
    expect(after.length - before.length).toBeLessThanOrEqual(6);
    expect(metrics.text).toMatch(
      /svc_http_requests_total\{listener="default",method="GET",route="\/edge\/management\/v1\/identities\/:id",status="404"\} 10/,
    );
    expect(metrics.text).toMatch(/route="unmatched",status="404"\} 40/);
    for (const s of sent) expect(metrics.text).not.toContain(s);
  });

  test('unusual request methods share one `other` label', async () => {
    const methods = ['PROPFIND', 'MKCOL', 'LOCK', 'UNLOCK', 'SEARCH', 'PURGE', 'REPORT', 'COPY'];
    for (const method of methods) await server.client.request(method, '/oidc/token');
    const metrics = (await server.client.get('/metrics')).text;

    for (const method of methods) expect(metrics).not.toContain(`method="${method}"`);
    expect(metrics).toMatch(/method="other",route="\/oidc\/token",status="405"\} 8/);
  });

  test('a login step that completes is logged and counted as the POST it was, without the auth request id', async () => {
    const { started } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const metrics = (await server.client.get('/metrics')).text;
    const requests = logLines.filter((l) => l.msg === 'request');

    expect(metrics).toMatch(/method="POST",route="\/oidc\/login\/username",status="303"\} 1/);
    expect(requests).toContainEqual(
      expect.objectContaining({ method: 'POST', path: '/oidc/login/username', status: 303 }),
    );
    expect(JSON.stringify(requests)).not.toContain(started.authRequestId);
  });

  test('oidc-provider endpoints are labelled by their fixed names', async () => {
    await server.client.get('/oidc/.well-known/openid-configuration');
    await server.client.post('/oidc/token', {
      form: { grant_type: 'refresh_token', refresh_token: random() },
    });
    await server.client.get(`/oidc/authorization/${random()}`);

    const metrics = (await server.client.get('/metrics')).text;

    expect(metrics).toContain('route="/oidc/.well-known/openid-configuration",status="200"');
    expect(metrics).toContain('route="/oidc/token",status="400"');
    expect(metrics).toContain('route="/oidc/authorization/:uid"');
  });
});

describe('a metrics listener of its own (SVC_METRICS_ADDRESS)', () => {
  test('serves /metrics and the health routes; the API listener no longer serves /metrics', async () => {
    const server = await startTestServer({ env: { SVC_METRICS_ADDRESS: '127.0.0.1:0' } });
    try {
      const scrapeUrl = server.app.listeners.find((l) => l.name === 'metrics')!.urls[0]!;
      const scraper = server.newClient({}, scrapeUrl);
      const scrape = await scraper.get('/metrics');
      expect(scrape.status).toBe(200);
      expect(scrape.text).toContain('svc_http_requests_total');
      expect((await scraper.get('/health/ready')).status).toBe(200);
      expect((await scraper.get('/edge/management/v1/identities')).status).toBe(404);
      expect((await server.client.get('/metrics')).status).toBe(404);
      await scraper.close();
    } finally {
      await server.close();
    }
  });
});
