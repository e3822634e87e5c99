import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { generateRootCa, issueClientCert } from '../../src/crypto/pki.js';
import { leafUnderExpiredIntermediate, serverAuthOnlyLeaf } from '../helpers/hostile-certificates.js';
import type { HttpsClient, TestResponse } from '../helpers/https-client.js';
import { followToCallback, passwordLogin, startAuthorization, submitLogin } from '../helpers/oidc-client.js';
import { usingPostgres } from '../helpers/test-database.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  confirmCode,
  cookieJar,
  DEVICE_GRANT,
  expireDeviceCode,
  headingOf,
  inputValue,
  personSignsIn,
  pollOnce,
} from '../device-flow/device-fixtures.js';
import { businessRows } from './business-rows.js';
import { hostileRequest, type Targets } from './hostile-requests.js';
import { edgeOperations, oidcOperations, type Operation } from './operations.js';
import { oauthErrorProblems, pageProblems, responseProblems } from './response-checks.js';
import { describeExchange, sendAll, type Exchange } from './send-hostile.js';
import { webhookTargets } from './webhook-targets.js';

/** CI replays one fixed seed; `npm run fuzz` passes a random one (printed, so it can be replayed). */
const SEED = Number(process.env.FUZZ_SEED ?? 42);
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 2400);
const IN_FLIGHT = 8;
/** Generous: a request this slow blocked the event loop or looped in a parser. */
const SLOW_MS = 5000;

interface Failure {
  problem: string;
  exchange: Exchange;
}

/**
 * Route labels the metrics may show: the template of a documented or known operation, the
 * provider's fixed endpoint names, or `unmatched`, never a path a client made up.
 */
function metricRoutes(ops: Operation[]): Set<string> {
  const routes = new Set([
    'unmatched',
    '/health/live',
    '/health/ready',
    '/metrics',
    '/.well-known/est/cacerts',
  ]);
  for (const op of ops) routes.add(op.path.replace(/\?.*$/, '').replace(/\{(\w+)\}/g, ':$1'));
  for (const name of [
    'keys',
    'authorization',
    'authorization/:uid',
    'token',
    'revoke',
    'userinfo',
    'end_session',
    'device/auth',
    'device',
  ])
    routes.add(`/oidc/${name}`);
  for (const doc of ['openid-configuration', 'oauth-authorization-server']) {
    routes.add(`/.well-known/${doc}`);
    routes.add(`/oidc/.well-known/${doc}`);
  }
  return routes;
}

/** A device authorization of the admin's CLI, as a device would ask for it. */
async function startDeviceFlow(client: HttpsClient) {
  const res = await client.post('/oidc/device/auth', {
    form: { client_id: 'svc', scope: 'openid offline_access' },
  });
  if (res.status !== 200) throw new Error(`device authorization: ${res.status} ${res.text}`);
  return res.body as { device_code: string; user_code: string; verification_uri_complete: string };
}

describe(`hostile input on every endpoint (${usingPostgres ? 'PostgreSQL' : 'PGlite'})`, () => {
  let server: TestServer;
  let ops: Operation[];
  let targets: Targets;
  let certificateClients: HttpsClient[];

  beforeAll(async () => {
    server = await startTestServer();
    const docs = await Promise.all(
      ['client', 'management'].map(async (api) => (await server.client.get(`/edge/${api}/v1/spec`)).body),
    );
    ops = [...docs.flatMap(edgeOperations), ...oidcOperations()];

    const session = await server.adminToken();
    const admin = { headers: { 'svc-session': session } };
    const identity = await server.client.post('/edge/management/v1/identities', {
      ...admin,
      body: { name: 'hostile-target', type: 'User', isAdmin: false },
    });
    await server.client.post('/edge/management/v1/enrollments', {
      ...admin,
      body: { method: 'ott', identityId: identity.body.data.id },
    });
    await server.client.post('/edge/management/v1/external-jwt-signers', {
      ...admin,
      body: {
        name: 'hostile-signer',
        issuer: 'https://idp.hostile.example',
        audience: 'svc',
        jwksEndpoint: 'https://idp.hostile.example/jwks',
      },
    });
    const ca = await generateRootCa({ commonName: 'Hostile CA' });
    await server.client.post('/edge/management/v1/cas', {
      ...admin,
      body: { name: 'hostile-ca', certPem: ca.certPem },
    });
    // A verified CA with auto enrollment, and chains of it that must never make an identity.
    const auto = await generateRootCa({ commonName: 'Hostile auto CA' });
    const autoId = (
      await server.client.post('/edge/management/v1/cas', {
        ...admin,
        body: { name: 'hostile-auto-ca', certPem: auto.certPem, isAutoCaEnrollmentEnabled: true },
      })
    ).body.data.id as string;
    const { verificationToken } = (await server.client.get(`/edge/management/v1/cas/${autoId}`, admin)).body
      .data;
    const proof = await issueClientCert(auto, { commonName: verificationToken });
    await server.client.post(`/edge/management/v1/cas/${autoId}/verify`, {
      headers: { ...admin.headers, 'content-type': 'text/plain' },
      body: proof.certPem,
    });
    const retired = await leafUnderExpiredIntermediate(auto, 'hostile-retired');
    const web = await serverAuthOnlyLeaf(auto, 'hostile-web');
    certificateClients = [
      server.newClient({ cert: retired.chainPem, key: retired.leaf.keyPem }),
      server.newClient({ cert: web.certPem, key: web.keyPem }),
    ];
    const webhooks = await webhookTargets(server, session);
    const ids: Record<string, string[]> = { deliveries: webhooks.deliveries };
    for (const collection of [
      'identities',
      'auth-policies',
      'external-jwt-signers',
      'cas',
      'enrollments',
      'authenticators',
      'webhooks',
    ]) {
      const list = await server.client.get(`/edge/management/v1/${collection}?limit=500`, admin);
      ids[collection] = (list.body.data as { id: string }[]).map((item) => item.id);
    }
    const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const authRequestIds: string[] = [];
    for (const method of ['password', 'cert', 'ext-jwt']) {
      authRequestIds.push((await startAuthorization(server.client, { method })).authRequestId);
    }
    // Codes and refresh tokens of the listener's other issuer (localhost), sent to either.
    const localhost = server.newClient({}, server.url.replace('127.0.0.1', 'localhost'));
    const grantTokens = { codes: [] as string[], refreshTokens: [] as string[] };
    for (let i = 0; i < 3; i++) {
      const started = await startAuthorization(localhost, { method: 'password' });
      const login = await submitLogin(localhost, started, {
        body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
      });
      grantTokens.codes.push((await followToCallback(localhost, login)).code);
      const other = await passwordLogin(localhost, ADMIN_USERNAME, ADMIN_PASSWORD);
      grantTokens.refreshTokens.push(other.tokens.refresh_token!);
    }
    // Device codes in each state a poll can find them in, and user codes to type.
    const adminLogin = { username: ADMIN_USERNAME, password: ADMIN_PASSWORD };
    const pending = await startDeviceFlow(server.client);
    const confirmed = await startDeviceFlow(server.client);
    await personSignsIn(cookieJar(server.client), confirmed.verification_uri_complete, adminLogin);
    const used = await startDeviceFlow(server.client);
    await personSignsIn(cookieJar(server.client), used.verification_uri_complete, adminLogin);
    if ((await pollOnce(server.client, used.device_code)).status !== 200) throw new Error('device poll');
    const expired = await startDeviceFlow(server.client);
    await expireDeviceCode(server, expired.user_code, 10);
    const port = new URL(server.url).port;
    targets = {
      device: {
        deviceCodes: [pending, confirmed, used, expired].map((d) => d.device_code),
        userCodes: [
          pending.user_code,
          pending.user_code.toLowerCase(),
          pending.user_code.replace('-', ''),
          used.user_code,
          expired.user_code,
        ],
      },
      ids,
      authRequestIds,
      grantTokens,
      hosts: [`127.0.0.1:${port}`, `localhost:${port}`],
      certificatePems: [retired.chainPem, retired.intermediatePem, web.certPem],
      clientCertificates: certificateClients.length,
      credentials: {
        'admin-session': { 'svc-session': session },
        'admin-bearer': { authorization: `Bearer ${tokens.access_token}` },
      },
    };
  });
  afterAll(() => server?.close());

  test('no request gets a 5xx or an undocumented answer, and none writes a business row', async () => {
    const rowsBefore = await businessRows(server.app.knex);
    const byKey = new Map(ops.map((op) => [op.key, op]));
    const requests = fc.sample(hostileRequest(ops, targets), { seed: SEED, numRuns: REQUESTS });
    const failures: Failure[] = [];
    let fiveHundreds = 0;
    let slowest: Exchange | undefined;

    await sendAll(
      server.client,
      requests,
      IN_FLIGHT,
      (exchange) => {
        const status = exchange.response?.status ?? 0;
        if (status >= 500) fiveHundreds++;
        if (!slowest || exchange.ms > slowest.ms) slowest = exchange;
        const problems = exchange.response
          ? responseProblems(byKey.get(exchange.request.operation)!, exchange.request, exchange.response)
          : [`no response: ${exchange.failure}`];
        if (exchange.ms > SLOW_MS) problems.push(`took more than ${SLOW_MS} ms`);
        for (const problem of problems) failures.push({ problem, exchange });
      },
      (request) =>
        request.clientCertificate === undefined
          ? server.client
          : certificateClients[request.clientCertificate]!,
    );

    console.log(
      `hostile: ${requests.length} requests, ${fiveHundreds} 5xx, ${failures.length} problems, seed ${SEED}` +
        ` (${usingPostgres ? 'PostgreSQL' : 'PGlite'}; replay with FUZZ_SEED=${SEED});` +
        ` slowest ${Math.round(slowest?.ms ?? 0)} ms: ${slowest?.request.operation}`,
    );
    // One example per operation and kind of problem, so that a run reads as a list of bugs.
    const grouped = new Map<string, Failure[]>();
    for (const f of failures) {
      const key = `${f.exchange.request.operation}: ${f.problem.replace(/\d+ ms/, 'N ms').slice(0, 120)}`;
      grouped.set(key, [...(grouped.get(key) ?? []), f]);
    }
    const report = [...grouped].map(
      ([key, list]) => `${key} (${list.length}×)\n${describeExchange(list[0]!.exchange)}`,
    );
    if (report.length > 0) console.log(`hostile: seed ${SEED}\n\n${report.join('\n\n')}`);

    const ready = await server.client.get('/health/ready');
    const rowsAfter = await businessRows(server.app.knex);
    expect(ready.status).toBe(200);
    expect(rowsAfter).toEqual(rowsBefore);
    expect(report).toEqual([]);
    // 2,400 requests take 30-50 s on a quiet 2-core machine; the bound only catches a hang.
  }, 180_000);

  test('real codes and refresh tokens redeemed under a foreign Host get invalid_grant, never a 5xx', async () => {
    const foreign = { host: targets.hosts[0]! };
    const forms = [
      ...targets.grantTokens.codes.map((code) => ({
        grant_type: 'authorization_code',
        code,
        redirect_uri: 'http://127.0.0.1:54321/auth/callback',
        code_verifier: 'x'.repeat(43),
      })),
      ...targets.grantTokens.refreshTokens.map((rt) => ({ grant_type: 'refresh_token', refresh_token: rt })),
    ];
    for (const form of forms) {
      const res = await server.client.post('/oidc/token', {
        form: { ...form, client_id: 'svc' },
        headers: foreign,
      });
      expect([res.status, res.body.error]).toEqual([400, 'invalid_grant']);
    }
  });

  test('device flow polls that are malformed, too big or replayed get RFC 6749 errors, never a 5xx', async () => {
    const fresh = await startDeviceFlow(server.client);
    const poll = (form: Record<string, string | string[]>, headers: Record<string, string> = {}) =>
      server.client.post('/oidc/token', { form, headers });
    const device = { grant_type: DEVICE_GRANT, client_id: 'svc' };
    const cases: [string, Promise<TestResponse>, number, string[]][] = [
      ['no device_code', poll(device), 400, ['invalid_request']],
      ['an empty device_code', poll({ ...device, device_code: '' }), 400, ['invalid_request']],
      [
        'device_code twice',
        poll({ ...device, device_code: [fresh.device_code, fresh.device_code] }),
        400,
        ['invalid_request'],
      ],
      ['an unknown device_code', poll({ ...device, device_code: 'x'.repeat(43) }), 400, ['invalid_grant']],
      [
        'a 64 KiB device_code',
        poll({ ...device, device_code: 'A'.repeat(65_536) }),
        400,
        ['invalid_grant', 'invalid_request'],
      ],
      [
        'control characters',
        poll({ ...device, device_code: '\u0000\u001b[2J' }),
        400,
        ['invalid_grant', 'invalid_request'],
      ],
      ['the user code instead', poll({ ...device, device_code: fresh.user_code }), 400, ['invalid_grant']],
      [
        'another client',
        poll({ ...device, client_id: 'other', device_code: fresh.device_code }),
        401,
        ['invalid_client'],
      ],
      [
        'no client',
        poll({ grant_type: DEVICE_GRANT, device_code: fresh.device_code }),
        400,
        ['invalid_request', 'invalid_client'],
      ],
      [
        'a code grant with a device_code',
        poll({ grant_type: 'authorization_code', client_id: 'svc', device_code: fresh.device_code }),
        400,
        ['invalid_request'],
      ],
      [
        'a refresh grant with a device_code',
        poll({ grant_type: 'refresh_token', client_id: 'svc', device_code: fresh.device_code }),
        400,
        ['invalid_request'],
      ],
      [
        'a device grant with a refresh_token',
        poll({ ...device, refresh_token: targets.grantTokens.refreshTokens[0]! }),
        400,
        ['invalid_request'],
      ],
    ];
    for (const [what, answer, status, errors] of cases) {
      const res = await answer;
      expect({ what, status: res.status, problems: oauthErrorProblems(res) }).toEqual({
        what,
        status,
        problems: [],
      });
      expect({ what, error: errors.includes(res.body.error) ? 'expected' : res.body.error }).toEqual({
        what,
        error: 'expected',
      });
    }
    const huge = await server.client.post('/oidc/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=${encodeURIComponent(DEVICE_GRANT)}&client_id=svc&device_code=${'x'.repeat(1024 * 1024)}`,
    });
    // Refused before it is parsed: the provider's body limit answers 400, ours 413.
    expect([400, 413]).toContain(huge.status);
    expect([huge.body.error, oauthErrorProblems(huge)]).toEqual(['invalid_request', []]);

    // The code was never confirmed: all that broke nothing, it is still pending.
    const still = await pollOnce(server.client, fresh.device_code);
    expect(still.body.error).toMatch(/^(authorization_pending|slow_down)$/);

    // A used code, presented again and again: invalid_grant each time.
    const done = await startDeviceFlow(server.client);
    await personSignsIn(cookieJar(server.client), done.verification_uri_complete, {
      username: ADMIN_USERNAME,
      password: ADMIN_PASSWORD,
    });
    expect((await pollOnce(server.client, done.device_code)).status).toBe(200);
    for (let i = 0; i < 3; i++) {
      const replay = await pollOnce(server.client, done.device_code);
      expect([replay.status, replay.body.error, oauthErrorProblems(replay)]).toEqual([
        400,
        'invalid_grant',
        [],
      ]);
    }
  });

  test('device authorization requests that are malformed get RFC 6749 errors, never a 5xx', async () => {
    const ask = (form: Record<string, string | string[]>) =>
      server.client.post('/oidc/device/auth', { form });
    const cases: [string, Promise<TestResponse>, number, string][] = [
      ['no scope', ask({ client_id: 'svc' }), 400, 'invalid_scope'],
      ['no openid', ask({ client_id: 'svc', scope: 'offline_access' }), 400, 'invalid_scope'],
      ['another client', ask({ client_id: 'other', scope: 'openid' }), 401, 'invalid_client'],
      ['no client', ask({ scope: 'openid' }), 400, 'invalid_request'],
      ['scope twice', ask({ client_id: 'svc', scope: ['openid', 'openid'] }), 400, 'invalid_request'],
    ];
    for (const [what, answer, status, error] of cases) {
      const res = await answer;
      expect({ what, status: res.status, error: res.body.error, problems: oauthErrorProblems(res) }).toEqual({
        what,
        status,
        error,
        problems: [],
      });
    }
  });

  test('wrong, used and expired user codes get the code form again with what went wrong, never a 5xx', async () => {
    const browser = cookieJar(server.client);
    // Each page of the form carries a new XSRF secret: the person types into the latest one.
    let page = (await browser.get('/oidc/device')).text;
    const enter = async (userCode: string) => {
      const res = await browser.post('/oidc/device', {
        form: { xsrf: inputValue(page, 'xsrf')!, user_code: userCode },
      });
      page = res.text;
      return res;
    };
    const used = targets.device.userCodes[3]!;
    const expired = targets.device.userCodes[4]!;
    const cases: [string, string][] = [
      ['BCDF-GHJK', 'No sign-in is waiting for that code.'],
      ['AEIO-UAEI', 'No sign-in is waiting for that code.'],
      ['x'.repeat(5000), 'No sign-in is waiting for that code.'],
      ['<script>alert(1)</script>', 'No sign-in is waiting for that code.'],
      ['', 'Enter the code your device shows.'],
      [used, 'That code has already been used.'],
      [expired, 'That code has expired.'],
    ];
    for (const [userCode, message] of cases) {
      const res = await enter(userCode);
      expect({ userCode: userCode.slice(0, 30), status: res.status, problems: pageProblems(res) }).toEqual({
        userCode: userCode.slice(0, 30),
        status: 400,
        problems: [],
      });
      expect(res.text).toContain(message);
      expect(res.text).not.toContain('<script>alert');
    }
    // Without the form's XSRF secret, or with fields twice, even the right code gets the form again.
    for (const form of [
      { xsrf: 'forged', user_code: targets.device.userCodes[0]! },
      { xsrf: [inputValue(page, 'xsrf')!, 'x'], user_code: targets.device.userCodes[0]! },
      { xsrf: inputValue(page, 'xsrf')!, user_code: [targets.device.userCodes[0]!, 'BCDF-GHJK'] },
    ]) {
      const res = await browser.post('/oidc/device', { form });
      page = res.text;
      expect([res.status, pageProblems(res)]).toEqual([400, []]);
      expect(res.text).toContain('This form has expired');
    }
    // Without the form's session at all: the form again, in a new session.
    const sessionless = await server.client.post('/oidc/device', {
      form: { xsrf: 'forged', user_code: targets.device.userCodes[0]! },
    });
    expect([sessionless.status, pageProblems(sessionless)]).toEqual([400, []]);
    expect(headingOf(sessionless.text)).toBe('Sign in on a device');
    // A code confirmed once cannot be confirmed again by someone else.
    const { login: again } = await confirmCode(
      cookieJar(server.client),
      `/oidc/device?user_code=${encodeURIComponent(used)}`,
    );
    expect([again.status, pageProblems(again)]).toEqual([400, []]);
    expect(again.text).toContain('That code has already been used.');
  });

  test('the metrics name route templates, never raw paths', async () => {
    const routes = metricRoutes(ops);
    const metrics = await server.client.get('/metrics');
    expect(metrics.status).toBe(200);
    const seen = new Set([...metrics.text.matchAll(/route="([^"]*)"/g)].map((m) => m[1]!));
    expect([...seen].filter((route) => !routes.has(route))).toEqual([]);
  });
});
