import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { LookupAddress } from 'node:dns';
import { createOutboundPost } from '../../src/services/webhooks/outbound-post.js';
import type { ResolveHost } from '../../src/services/webhooks/target-address-guard.js';
import { usingPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { insertWebhook } from '../helpers/webhook-rows.js';
import type { Receiver } from '../webhooks/webhook-receiver.js';
import {
  hostileReceivers,
  RECEIVER_MARKER,
  storedDeliveryErrors,
  webhookAdmin,
} from './hostile-receivers.js';

const DB = usingPostgres ? 'PostgreSQL' : 'PGlite';

/**
 * What the names resolve to. No public DNS name can be relied on to resolve to loopback offline,
 * so the resolver is the one part replaced: the delivery engine, the outbound POST and its address
 * checks are the real ones, and so is the receiver the names would lead to.
 */
const ANSWERS: Record<string, LookupAddress[]> = {
  'loopback.receiver.test': [{ address: '127.0.0.1', family: 4 }],
  'mapped.receiver.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
  'internal.receiver.test': [
    { address: '127.0.0.1', family: 4 },
    { address: '::1', family: 6 },
    { address: '10.0.0.1', family: 4 },
  ],
  'metadata.receiver.test': [{ address: '169.254.169.254', family: 4 }],
};

const REFUSALS: Record<string, string> = {
  'loopback.receiver.test': 'target address is loopback (webhooks.allowPrivateTargets)',
  'mapped.receiver.test': 'target address is loopback (webhooks.allowPrivateTargets)',
  'internal.receiver.test': 'target address is loopback (webhooks.allowPrivateTargets)',
  'metadata.receiver.test': 'target address is link-local (webhooks.allowPrivateTargets)',
};

/**
 * A webhook saved with a DNS name (which the API cannot judge) that resolves to an internal
 * address at delivery time: private targets not allowed (the default), the attempt fails saying
 * what kind of address it is (never which: that would map internal names for an admin), and the
 * receiver listening there never sees a connection.
 */
describe(`webhook DNS names resolving to internal addresses are refused at delivery (${DB})`, () => {
  let receivers: Awaited<ReturnType<typeof hostileReceivers>>;
  let receiver: Receiver;
  let server: TestServer;
  const looked: string[] = [];
  const resolve: ResolveHost = async (name) => {
    looked.push(name);
    const answers = ANSWERS[name];
    if (!answers) throw Object.assign(new Error(`no address for ${name}`), { code: 'ENOTFOUND' });
    return answers;
  };

  beforeAll(async () => {
    receivers = await hostileReceivers(Object.keys(ANSWERS));
    receiver = await receivers.start((_req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/plain', 'x-receiver': RECEIVER_MARKER })
        .end(RECEIVER_MARKER);
    });
    server = await startTestServer({
      webhooks: { post: createOutboundPost({ allowPrivateTargets: false, extraCa: receivers.ca, resolve }) },
    });
  });
  afterAll(async () => {
    await server?.close();
    await receivers?.close();
  });

  test('each attempt fails saying the address is internal, and nothing connects to the receiver', async () => {
    const admin = await webhookAdmin(server);
    const hooks: [name: string, id: string][] = [];
    for (const name of Object.keys(ANSWERS)) {
      // Accepted: a DNS name is judged on the addresses it resolves to when it is called.
      hooks.push([name, await admin.create(name, receiver.url(`/${name}`, name))]);
    }
    // Saved while private targets were allowed, delivered after they no longer are: the URL is
    // checked again before every attempt.
    const saved = await insertWebhook(server.app.knex, {
      name: 'saved-before',
      url: receiver.url('/saved-before'),
      events: ['identity.created'],
    });
    await admin.event('resolved-to-loopback');

    for (const [name, id] of hooks) {
      const delivery = await admin.attempted(id);
      expect({ name, ...delivery }).toMatchObject({
        name,
        status: 'pending',
        lastStatusCode: null,
        lastError: REFUSALS[name],
      });
      expect(delivery.history.map((a) => [a.statusCode, a.error])).toEqual([[null, REFUSALS[name]]]);
      expect((await admin.deliveries(id)).text).not.toContain(RECEIVER_MARKER);
    }
    const savedBefore = await admin.attempted(saved.id);
    expect(savedBefore).toMatchObject({
      status: 'pending',
      lastStatusCode: null,
      lastError: `target URL names the loopback address 127.0.0.1 (allowed only with webhooks.allowPrivateTargets)`,
    });
    expect(new Set(looked)).toEqual(new Set(Object.keys(ANSWERS)));
    expect(receiver.connections()).toBe(0);
    expect(receiver.hits).toEqual([]);
    const errors = await storedDeliveryErrors(server);
    expect(errors.length).toBeGreaterThanOrEqual((hooks.length + 1) * 2);
    expect(errors.filter((e) => e.includes(RECEIVER_MARKER))).toEqual([]);

    // The control: with private targets allowed, the same name and receiver do connect, so what
    // kept the connections away above was the address check.
    const allowed = createOutboundPost({ allowPrivateTargets: true, extraCa: receivers.ca, resolve });
    const answer = await allowed(receiver.url('/control', 'loopback.receiver.test'), '{}', {});
    expect(answer.status).toBe(200);
    expect(receiver.hits.map((h) => h.path)).toEqual(['/control']);
  });
});
