import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { capturedAuditLog } from '../helpers/audit-log.js';
import type { HttpsClient, TestResponse } from '../helpers/https-client.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  confirmCode,
  cookieJar,
  deviceClient,
  headingOf,
  inputValue,
  startDevice,
  type Browser,
} from './device-fixtures.js';

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
    const refusedAgain = await typeWrongCode(guesser, page);
    const other = await typeWrongCodes(cookieJar(from('127.0.0.4')), 1);

    expect(statuses).toEqual(Array(10).fill(400));
    expect(page.text).toContain('No sign-in is waiting for that code');
    expect(refused.status).toBe(429);
    expect(refusedAgain.status).toBe(429);
    expect(Number(refused.header('retry-after'))).toBeGreaterThan(0);
    expect(headingOf(refused.text)).toBe('Too many wrong codes');
    expect(refused.header('content-security-policy')).toContain("default-src 'none'");
    expect(other.statuses).toEqual([400]);
    const events = audit.events();
    expect(
      events.filter((e) => e.event === 'oidc.device.user-code-wrong' && e.sourceAddress === '127.0.0.3'),
    ).toHaveLength(10);
    expect(
      events.filter((e) => e.event === 'oidc.device.user-code-throttled' && e.sourceAddress === '127.0.0.3'),
    ).toHaveLength(2);
    // Stored aggregated per address and minute: rows per minute, not per refused post.
    const stored = await server.app
      .knex('audit_events')
      .where({ source_address: '127.0.0.3' })
      .select('event', 'outcome', 'attempts');
    const attempts = (event: string) =>
      stored.filter((r) => r.event === event).reduce((n, r) => n + Number(r.attempts), 0);
    expect(stored.length).toBeLessThanOrEqual(4);
    expect(attempts('oidc.device.user-code-wrong')).toBe(10);
    expect(attempts('oidc.device.user-code-throttled')).toBe(2);
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

describe('device authorization grant: wrong user codes typed in parallel', () => {
  let server: TestServer;
  beforeAll(async () => {
    // The authorization endpoint's own limit is high here, so only the user-code limit can refuse.
    server = await startTestServer({
      env: {
        ...LIMITED,
        SVC_RATE_LIMITS_AUTHORIZATION_BURST: '200',
        SVC_RATE_LIMITS_AUTHORIZATION_PER_SECOND: '10',
      },
    });
  });
  afterAll(() => server.close());

  test('40 wrong codes posted at once from 40 form sessions of one address: 10 are checked, 30 get 429', async () => {
    const client = server.newClient({ localAddress: '127.0.0.8' });
    const browsers = Array.from({ length: 40 }, () => cookieJar(client));
    const forms = await Promise.all(browsers.map((b) => b.get('/oidc/device')));

    const answers = await Promise.all(browsers.map((b, i) => typeWrongCode(b, forms[i]!)));

    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array(10).fill(400), ...Array(30).fill(429)]);
    expect(answers.filter((a) => a.status === 429).every((a) => Number(a.header('retry-after')) > 0)).toBe(
      true,
    );
  });

  test('a right code is not counted: after 9 wrong codes a person’s right code and one more wrong code are checked', async () => {
    const address = '127.0.0.9';
    const { config, close } = await deviceClient(server);
    try {
      const guesser = cookieJar(server.newClient({ localAddress: address }));
      const { page, statuses } = await typeWrongCodes(guesser, 9);
      const { verification_uri_complete } = await startDevice(config);
      const person = cookieJar(server.newClient({ localAddress: address }));

      const { login } = await confirmCode(person, verification_uri_complete!);
      const last = await typeWrongCode(guesser, page);
      const refused = await typeWrongCode(guesser, last);

      expect(statuses).toEqual(Array(9).fill(400));
      expect(login.status).toBe(303);
      expect(last.status).toBe(400);
      expect(refused.status).toBe(429);
    } finally {
      close();
    }
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

  test('posts that carried no wrong code give their point back in the shared count too', async () => {
    // Within the authorization endpoint's own budget of 15: 1 form, 13 posts on A, 1 post on B.
    const onA = cookieJar(a.newClient({ localAddress: '127.0.0.10' }));
    const onB = cookieJar(b.newClient({ localAddress: '127.0.0.10' }));
    let page = await onA.get('/oidc/device');
    const empty: number[] = [];
    for (let i = 0; i < 3; i++) {
      page = await onA.post('/oidc/device', {
        form: { xsrf: inputValue(page.text, 'xsrf') ?? '', user_code: '' },
      });
      empty.push(page.status);
    }

    const wrong = await typeWrongCodes(onA, 10, page);
    const refused = await onB.post('/oidc/device', { form: { user_code: 'BBBB-BBBB' } });

    expect(empty).toEqual([400, 400, 400]);
    expect(wrong.statuses).toEqual(Array(10).fill(400));
    expect(refused.status).toBe(429);
  });
});
