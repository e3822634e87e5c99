import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { passwordLogin } from '../helpers/oidc-client.js';
import { usingPostgres } from '../helpers/test-database.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { businessRows } from './business-rows.js';
import { hostileRequest, type Targets } from './hostile-requests.js';
import { edgeOperations, type Operation } from './operations.js';
import { responseProblems } from './response-checks.js';
import { describeExchange, sendAll, type Exchange } from './send-hostile.js';
import { webhookTargets } from './webhook-targets.js';

/** CI replays one fixed seed; `npm run fuzz` passes a random one (printed, so it can be replayed). */
const SEED = Number(process.env.FUZZ_SEED ?? 42);
const REQUESTS = Number(process.env.FUZZ_WEBHOOK_REQUESTS ?? 800);
const IN_FLIGHT = 8;
const DB = usingPostgres ? 'PostgreSQL' : 'PGlite';

const MGMT = '/edge/management/v1';
const WEBHOOK_OPERATIONS = [
  `GET ${MGMT}/webhooks`,
  `POST ${MGMT}/webhooks`,
  `GET ${MGMT}/webhooks/{id}`,
  `PATCH ${MGMT}/webhooks/{id}`,
  `DELETE ${MGMT}/webhooks/{id}`,
  `POST ${MGMT}/webhooks/{id}/rotate-secret`,
  `GET ${MGMT}/webhooks/{id}/deliveries`,
  `POST ${MGMT}/webhooks/{id}/deliveries/{deliveryId}/retry`,
].sort();

/**
 * The suite's generic fuzzer (hostile-requests.ts) on the webhook operations alone, as the served
 * OpenAPI document describes them, with real webhooks and deliveries to aim at: what the whole
 * suite (hostile-api.test.ts) sends them too, in numbers that reach every operation, caller and
 * real row.
 */
describe(`hostile input on the webhook operations (${DB})`, () => {
  let server: TestServer;
  let ops: Operation[];
  let targets: Targets;
  let real: { webhooks: string[]; deliveries: string[] };

  beforeAll(async () => {
    server = await startTestServer();
    const doc = (await server.client.get(`${MGMT}/spec`)).body;
    ops = edgeOperations(doc).filter((op) => op.path.startsWith(`${MGMT}/webhooks`));
    const session = await server.adminToken();
    const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    real = await webhookTargets(server, session);
    targets = {
      ids: { webhooks: real.webhooks, deliveries: real.deliveries },
      authRequestIds: [],
      grantTokens: { codes: [], refreshTokens: [] },
      device: { deviceCodes: [], userCodes: [] },
      hosts: [],
      credentials: {
        'admin-session': { 'svc-session': session },
        'admin-bearer': { authorization: `Bearer ${tokens.access_token}` },
      },
      // A real certificate that means nothing here, for the bodies that carry one.
      certificatePems: [server.ca],
      clientCertificates: 0,
    };
  });
  afterAll(() => server?.close());

  test('the management document describes every webhook operation, so the generic fuzzer draws each', () => {
    expect(ops.map((op) => op.key).sort()).toEqual(WEBHOOK_OPERATIONS);
    // Writes get only bodies that can never be valid: no hostile request may create, change,
    // delete, rotate or retry anything.
    expect(ops.filter((op) => op.writes).map((op) => op.method)).not.toContain('GET');
    expect(ops.filter((op) => op.method !== 'GET').every((op) => op.writes)).toBe(true);
  });

  test('no request gets a 5xx or an undocumented answer, none changes a webhook, and real rows are reached', async () => {
    const rowsBefore = await businessRows(server.app.knex);
    const byKey = new Map(ops.map((op) => [op.key, op]));
    const requests = fc.sample(hostileRequest(ops, targets), { seed: SEED, numRuns: REQUESTS });
    const exchanges: Exchange[] = [];
    const failures: { problem: string; exchange: Exchange }[] = [];
    await sendAll(server.client, requests, IN_FLIGHT, (exchange) => {
      exchanges.push(exchange);
      const problems = exchange.response
        ? responseProblems(byKey.get(exchange.request.operation)!, exchange.request, exchange.response)
        : [`no response: ${exchange.failure}`];
      // A signing secret is answered by a create or a rotation only, neither of which may succeed.
      if (exchange.response?.text.includes('whsec_')) problems.push('a signing secret in the answer');
      for (const problem of problems) failures.push({ problem, exchange });
    });
    const fiveHundreds = exchanges.filter((e) => (e.response?.status ?? 0) >= 500).length;
    console.log(
      `hostile webhooks: ${requests.length} requests, ${fiveHundreds} 5xx, ${failures.length} problems, seed ${SEED}` +
        ` (${DB}; replay with FUZZ_SEED=${SEED})`,
    );
    const grouped = new Map<string, { problem: string; exchange: Exchange }[]>();
    for (const f of failures) {
      const key = `${f.exchange.request.operation}: ${f.problem.slice(0, 120)}`;
      grouped.set(key, [...(grouped.get(key) ?? []), f]);
    }
    const report = [...grouped].map(
      ([key, list]) => `${key} (${list.length}×)\n${describeExchange(list[0]!.exchange)}`,
    );
    if (report.length > 0) console.log(`hostile webhooks: seed ${SEED}\n\n${report.join('\n\n')}`);
    expect(report).toEqual([]);
    expect(await businessRows(server.app.knex)).toEqual(rowsBefore);

    // Every operation from every caller, and the real rows reached where a request may reach them.
    const aimedAtReal = (e: Exchange, ids: string[]) => ids.some((id) => e.request.path.includes(id));
    const seen = (key: string, which: (e: Exchange) => boolean) =>
      exchanges.filter((e) => e.request.operation === key && which(e));
    const isAdmin = (e: Exchange) => e.request.caller.startsWith('admin');
    const coverage = Object.fromEntries(
      WEBHOOK_OPERATIONS.map((key) => [
        key,
        {
          callers: [...new Set(seen(key, () => true).map((e) => e.request.caller))].sort(),
          realWebhook: key.includes('{id}')
            ? seen(key, (e) => aimedAtReal(e, real.webhooks)).length > 0
            : null,
          realDelivery: key.includes('{deliveryId}')
            ? seen(key, (e) => aimedAtReal(e, real.deliveries)).length > 0
            : null,
        },
      ]),
    );
    for (const key of WEBHOOK_OPERATIONS) {
      expect({ key, ...coverage[key] }).toEqual({
        key,
        callers: ['admin-bearer', 'admin-session', 'anonymous', 'garbage'],
        realWebhook: key.includes('{id}') ? true : null,
        realDelivery: key.includes('{deliveryId}') ? true : null,
      });
    }
    // An admin reads real webhooks and their deliveries, and sends a real one bodies it refuses.
    const statuses = (key: string) =>
      new Set(seen(key, (e) => isAdmin(e) && aimedAtReal(e, real.webhooks)).map((e) => e.response?.status));
    expect(statuses(`GET ${MGMT}/webhooks/{id}`)).toContain(200);
    expect(statuses(`GET ${MGMT}/webhooks/{id}/deliveries`)).toContain(200);
    expect(statuses(`PATCH ${MGMT}/webhooks/{id}`)).toContain(400);
  }, 120_000);
});
