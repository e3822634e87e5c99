import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { usingPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import type { Receiver } from '../webhooks/webhook-receiver.js';
import {
  hostileReceivers,
  keptLog,
  RECEIVER_MARKER,
  storedDeliveryErrors,
  webhookAdmin,
} from './hostile-receivers.js';

const DB = usingPostgres ? 'PostgreSQL' : 'PGlite';
/**
 * The test servers' claim lease: an attempt's deadline is half of it (at most the 10 s of
 * production, src/compose.ts), here 6 s: short, yet long enough for the requests made meanwhile.
 */
const LEASE_MS = 12_000;
const TIMED_OUT = 'timed out after 6 s';

/**
 * Receivers that never answer, or answer a byte at a time forever, through the real delivery
 * engine: the attempt fails at its deadline, the delivery is tried again later, and meanwhile the
 * management API answers and other webhooks are delivered.
 */
describe(`webhook receivers that hang (${DB})`, () => {
  let receivers: Awaited<ReturnType<typeof hostileReceivers>>;
  let receiver: Receiver;
  let server: TestServer;
  const log = keptLog();
  /** Requests the receiver still holds open, by path. */
  const holding = new Map<string, number>();

  beforeAll(async () => {
    receivers = await hostileReceivers();
    receiver = await receivers.start((req, res) => {
      const path = req.url ?? '';
      holding.set(path, (holding.get(path) ?? 0) + 1);
      res.on('close', () => holding.set(path, holding.get(path)! - 1));
      if (path === '/silent') return; // never a byte back
      if (path === '/trickle') {
        // A status and then a byte of the marker every 100 ms, forever.
        res.writeHead(200, { 'content-type': 'text/plain' });
        let i = 0;
        const timer = setInterval(() => res.write(RECEIVER_MARKER[i++ % RECEIVER_MARKER.length]!), 100);
        res.on('close', () => clearInterval(timer));
        return;
      }
      res.writeHead(204).end();
    });
    server = await startTestServer({
      env: receivers.privateTargetsEnv,
      logger: log.logger,
      webhooks: { leaseMs: LEASE_MS },
    });
  });
  afterAll(async () => {
    await server?.close();
    await receivers?.close();
  });

  test('the attempt fails by the deadline and is retried later, while the API answers and other webhooks are delivered', async () => {
    const admin = await webhookAdmin(server);
    const silent = await admin.create('silent', receiver.url('/silent'));
    const trickle = await admin.create('trickle', receiver.url('/trickle'));
    const fine = await admin.create('fine', receiver.url('/fine'));
    await admin.event('hung-on');

    // Both hanging receivers hold their request; meanwhile the API answers, and the third webhook
    // is delivered.
    await waitFor(() => holding.get('/silent') === 1 && holding.get('/trickle') === 1, {
      what: 'both hanging receivers to hold a request',
    });
    const [during, list, ready] = await Promise.all([
      admin.deliveries(silent),
      admin.api.get('/webhooks'),
      server.client.get('/health/ready'),
    ]);
    expect([holding.get('/silent'), holding.get('/trickle')]).toEqual([1, 1]);
    expect(during.list).toMatchObject([{ status: 'pending', attempts: 0 }]);
    expect([list.status, list.body.data.length, ready.status]).toEqual([200, 3, 200]);
    expect(await admin.attempted(fine)).toMatchObject({ status: 'succeeded', lastStatusCode: 204 });

    // The deadline: each attempt failed, the connection closed, the delivery due again later.
    for (const [name, id] of [
      ['silent', silent],
      ['trickle', trickle],
    ] as const) {
      const delivery = await admin.attempted(id);
      expect({ name, ...delivery }).toMatchObject({
        name,
        status: 'pending',
        lastStatusCode: null,
        lastError: TIMED_OUT,
      });
      expect(Date.parse(delivery.nextAttemptAt!)).toBeGreaterThan(Date.parse(delivery.lastAttemptAt!));
      expect((await admin.deliveries(id)).text).not.toContain(RECEIVER_MARKER);
    }

    // Retried later: the same delivery again (its webhook-id), failing the same way.
    const again = await admin.attempted(silent, 2);
    expect(again.history.map((a) => a.error)).toEqual([TIMED_OUT, TIMED_OUT]);
    const ids = receiver.hits.filter((h) => h.path === '/silent').map((h) => h.headers['webhook-id']);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(1);
    expect((await storedDeliveryErrors(server)).filter((e) => e.includes(RECEIVER_MARKER))).toEqual([]);
    // Nor the log, down to debug (which holds a line per request).
    expect(log.text()).toContain('"requestId"');
    expect(log.text()).not.toContain(RECEIVER_MARKER);
  }, 60_000);
});
