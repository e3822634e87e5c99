import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { capturedAuditLog } from '../helpers/audit-log.js';
import type { HttpsClient, TestResponse } from '../helpers/https-client.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { cookieJar, headingOf, inputValue, type Browser } from './device-fixtures.js';

const LIMITED = {
  SVC_RATE_LIMITS_ENABLED: 'true',
  SVC_RATE_LIMITS_AUTHORIZATION_PER_SECOND: '1',
  SVC_RATE_LIMITS_AUTHORIZATION_BURST: '15',
};

/** One wrong code typed into the form; answers the page, whose form carries the next XSRF secret. */
async function typeWrongCode(browser: Browser, previous: TestResponse): Promise<TestResponse> {
  return browser.post('/oidc/device', {
    form: { xsrf: inputValue(previous.text, 'xsrf') ?? '', user_code: 'BBBB-BBBB' },
  });
}

async function typeWrongCodes(browser: Browser, count: number, start?: TestResponse) {
  let page = start ?? (await browser.get('/oidc/device'));
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    page = await typeWrongCode(browser, page);
    statuses.push(page.status);
  }
  return { page, statuses };
}

describe('device authorization grant: limits', () => {
  let server: TestServer;
  const audit = capturedAuditLog();
  beforeAll(async () => {
    server = await startTestServer({ env: LIMITED, logger: audit.logger });
  });
  afterAll(() => server.close());

  const from = (address: string): HttpsClient => server.newClient({ localAddress: address });

  test('wrong user codes: 10 a minute per client address, then 429 with Retry-After and an audit event; other addresses go on', async () => {
    const guesser = cookieJar(from('127.0.0.3'));

    const { page, statuses } = await typeWrongCodes(guesser, 10);
    const refused = await typeWrongCode(guesser, page);
    const other = await typeWrongCodes(cookieJar(from('127.0.0.4')), 1);

    expect(statuses).toEqual(Array(10).fill(400));
    expect(page.text).toContain('No sign-in is waiting for that code');
    expect(refused.status).toBe(429);
    expect(Number(refused.header('retry-after'))).toBeGreaterThan(0);
    expect(headingOf(refused.text)).toBe('Too many wrong codes');
    expect(refused.header('content-security-policy')).toContain("default-src 'none'");
    expect(other.statuses).toEqual([400]);
    const events = audit.events();
    expect(
      events.filter((e) => e.event === 'oidc.device.user-code-wrong' && e.sourceAddress === '127.0.0.3'),
    ).toHaveLength(10);
    expect(
      events.some((e) => e.event === 'oidc.device.user-code-throttled' && e.sourceAddress === '127.0.0.3'),
    ).toBe(true);
  });

  test('POST /oidc/device/auth is limited per address like the authorization endpoint', async () => {
    const client = from('127.0.0.5');
    const ask = () => client.post('/oidc/device/auth', { form: { client_id: 'svc', scope: 'openid' } });

    const answers: number[] = [];
    for (let i = 0; i < 15; i++) answers.push((await ask()).status);
    const refused = await ask();

    expect(answers).toEqual(Array(15).fill(200));
    expect(refused.status).toBe(429);
    expect(refused.header('retry-after')).toBeDefined();
  });

  test('GET /oidc/device, which stores the code form’s session, is limited the same way', async () => {
    const client = from('127.0.0.6');

    const answers: number[] = [];
    for (let i = 0; i < 15; i++) answers.push((await client.get('/oidc/device')).status);
    const refused = await client.get('/oidc/device');

    expect(answers).toEqual(Array(15).fill(200));
    expect(refused.status).toBe(429);
  });
});

describeWithPostgres('device authorization grant: wrong user codes are counted across instances', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    const env = { ...LIMITED, SVC_RATE_LIMITS_STORE: 'postgres' };
    a = await startTestServer({ env });
    b = await startTestServer({ env, databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  test('5 wrong codes on each instance use up the address’s 10; the next on either gets 429', async () => {
    const onA = cookieJar(a.newClient({ localAddress: '127.0.0.7' }));
    const onB = cookieJar(b.newClient({ localAddress: '127.0.0.7' }));

    const first = await typeWrongCodes(onA, 5);
    const second = await typeWrongCodes(onB, 5);
    const refused = await typeWrongCode(onA, first.page);

    expect([...first.statuses, ...second.statuses]).toEqual(Array(10).fill(400));
    expect(refused.status).toBe(429);
  });
});
