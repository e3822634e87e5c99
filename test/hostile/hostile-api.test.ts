import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { generateRootCa, issueClientCert } from '../../src/crypto/pki.js';
import { leafUnderExpiredIntermediate, serverAuthOnlyLeaf } from '../helpers/hostile-certificates.js';
import type { HttpsClient } from '../helpers/https-client.js';
import { followToCallback, passwordLogin, startAuthorization, submitLogin } from '../helpers/oidc-client.js';
import { usingPostgres } from '../helpers/test-database.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { businessRows } from './business-rows.js';
import { hostileRequest, type Targets } from './hostile-requests.js';
import { edgeOperations, oidcOperations, type Operation } from './operations.js';
import { responseProblems } from './response-checks.js';
import { describeExchange, sendAll, type Exchange } from './send-hostile.js';

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
  ])
    routes.add(`/oidc/${name}`);
  for (const doc of ['openid-configuration', 'oauth-authorization-server']) {
    routes.add(`/.well-known/${doc}`);
    routes.add(`/oidc/.well-known/${doc}`);
  }
  return routes;
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
    const ids: Record<string, string[]> = {};
    for (const collection of [
      'identities',
      'auth-policies',
      'external-jwt-signers',
      'cas',
      'enrollments',
      'authenticators',
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
    const port = new URL(server.url).port;
    targets = {
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

  test('the metrics name route templates, never raw paths', async () => {
    const routes = metricRoutes(ops);
    const metrics = await server.client.get('/metrics');
    expect(metrics.status).toBe(200);
    const seen = new Set([...metrics.text.matchAll(/route="([^"]*)"/g)].map((m) => m[1]!));
    expect([...seen].filter((route) => !routes.has(route))).toEqual([]);
  });
});
