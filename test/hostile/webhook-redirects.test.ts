import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { usingPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
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
 * A receiver answering a redirect to another receiver, private targets allowed (both listen on
 * 127.0.0.1): no redirect is followed (docs/operations.md, "Webhook targets"), the attempt is a
 * failure that keeps the 3xx status, and the place it points to gets nothing.
 */
describe(`webhook receivers answering redirects (${DB})`, () => {
  let receivers: Awaited<ReturnType<typeof hostileReceivers>>;
  /** Where the redirects point: it must never see a connection. */
  let elsewhere: Receiver;
  let redirector: Receiver;
  let server: TestServer;
  const log = keptLog();
  /** Webhook name → the redirect its receiver answers. */
  let redirects: Record<string, { status: number; location: string }>;

  beforeAll(async () => {
    receivers = await hostileReceivers();
    elsewhere = await receivers.start();
    redirects = {
      'moved-302': { status: 302, location: elsewhere.url('/stolen') },
      'moved-301': { status: 301, location: elsewhere.url('/stolen') },
      'moved-303': { status: 303, location: elsewhere.url('/stolen') },
      'moved-307': { status: 307, location: elsewhere.url('/stolen') },
      'moved-308': { status: 308, location: elsewhere.url('/stolen', 'localhost') },
      // Back to the same receiver: a follower would show up there as a second path.
      'moved-relative': { status: 302, location: '/followed' },
    };
    redirector = await receivers.start((req, res) => {
      const redirect = redirects[(req.url ?? '').slice(1)];
      if (!redirect) return void res.writeHead(404).end();
      res
        .writeHead(redirect.status, { location: redirect.location, 'content-type': 'text/plain' })
        .end(`${RECEIVER_MARKER} moved to ${redirect.location}`);
    });
    server = await startTestServer({ env: receivers.privateTargetsEnv, logger: log.logger });
  });
  afterAll(async () => {
    await server?.close();
    await receivers?.close();
  });

  test('the attempt fails with the 3xx status, and the receiver it points to gets no connection', async () => {
    const admin = await webhookAdmin(server);
    const hooks: [name: string, id: string][] = [];
    for (const name of Object.keys(redirects))
      hooks.push([name, await admin.create(name, redirector.url(`/${name}`))]);
    await admin.event('redirected');

    for (const [name, id] of hooks) {
      const { status } = redirects[name]!;
      const delivery = await admin.attempted(id);
      expect({ name, ...delivery }).toMatchObject({
        name,
        status: 'pending',
        lastStatusCode: status,
        lastError: `the receiver answered ${status}`,
      });
      // A failure: tried again later.
      expect(Date.parse(delivery.nextAttemptAt!)).toBeGreaterThan(Date.parse(delivery.lastAttemptAt!));
      expect(delivery.history[0]).toMatchObject({
        statusCode: status,
        error: `the receiver answered ${status}`,
      });
      expect((await admin.deliveries(id)).text).not.toContain(RECEIVER_MARKER);
    }
    expect(elsewhere.connections()).toBe(0);
    expect(elsewhere.hits).toEqual([]);
    // Each webhook's own path, as many times as it was attempted; never where a redirect pointed.
    expect(new Set(redirector.hits.map((h) => h.path))).toEqual(new Set(hooks.map(([name]) => `/${name}`)));
    expect((await storedDeliveryErrors(server)).filter((e) => e.includes(RECEIVER_MARKER))).toEqual([]);
    // Nor the log, down to debug (which holds a line per request).
    expect(log.text()).toContain('"requestId"');
    expect(log.text()).not.toContain(RECEIVER_MARKER);
  });
});
