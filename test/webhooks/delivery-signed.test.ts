import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Knex } from 'knex';
import { inTransaction } from '../../src/db/transaction.js';
import { AUDIT_EVENT_COLUMNS, type AuditEventRow } from '../../src/repositories/audit-event-row.js';
import { auditEventView } from '../../src/services/audit-event-view.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  startWebhookReceiver,
  type ReceivedAttempt,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js';
import { fanoutCaughtUp, insertWebhook } from '../helpers/webhook-rows.js';
import { createIdentity, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';

/** The stored event of `event` about `identityId`. */
async function storedEvent(knex: Knex, event: string, identityId: string): Promise<AuditEventRow> {
  const rows = await knex('audit_events')
    .select(knex.raw(AUDIT_EVENT_COLUMNS))
    .where({ event, identity_id: identityId });
  expect(rows).toHaveLength(1);
  return rows[0] as AuditEventRow;
}

const bodyOf = (a: ReceivedAttempt) =>
  JSON.parse(a.body) as { type: string; timestamp: string; sequence: number; data: Record<string, any> };

/** A real controller delivering to a real HTTPS receiver that verifies with `standardwebhooks`. */
describe('webhook delivery: signed events', () => {
  let receiver: WebhookReceiver;
  let server: TestServer;
  let knex: Knex;
  let api: ManagementApi;
  /** Subscribed to identity events. */
  const main = 'identities';

  /** Waits for the 2xx delivery to `name` of the event with stored id `eventId`. */
  const deliveryOf = (name: string, eventId: string) =>
    waitFor(() => receiver.delivered(name).find((a) => bodyOf(a).data.id === eventId), {
      what: `the delivery of event ${eventId} to ${name}`,
    });

  /** A webhook made through the management API; answers its id and signing secret. */
  async function createWebhook(body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
    const res = await api.post('/webhooks', { body });
    if (res.status !== 201) throw new Error(`webhook create failed: ${res.status} ${res.text}`);
    return res.body.data;
  }

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({ env: receiver.controllerEnv });
    knex = server.app.knex;
    api = managementApi(server, await server.adminToken());
    await waitFor(() => fanoutCaughtUp(knex), { what: 'the fan-out to pass the events so far' });
    const { secret } = await createWebhook({
      name: main,
      url: receiver.urlFor(main),
      events: ['identity.*'],
    });
    receiver.state.secrets.set(main, secret);
  }, 180_000);
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  test('an identity created through the management API arrives signed, its stored event as data', async () => {
    const id = await createIdentity(api, { name: 'webhook-subject', isAdmin: false });
    const row = await storedEvent(knex, 'identity.created', id);
    const attempt = await deliveryOf(main, row.id);

    expect(attempt.verifiedWith).toEqual([main]);
    expect(attempt.signatures).toHaveLength(1);
    expect(attempt.id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(attempt.contentType).toBe('application/json');
    expect(attempt.userAgent).toMatch(/^svc-controller/);
    const body = bodyOf(attempt);
    expect(body).toEqual({
      type: 'identity.created',
      timestamp: new Date(row.occurred_at).toISOString(),
      sequence: expect.any(Number),
      data: auditEventView(row),
    });
    expect(body.data).toMatchObject({ event: 'identity.created', identityId: id });
    expect(attempt.body).toBe(JSON.stringify(body));

    const delivery = await waitFor(async () => {
      const d = await knex('webhook_deliveries').where({ id: attempt.id }).first();
      return d?.status === 'succeeded' && d;
    });
    expect(delivery).toMatchObject({ event: 'identity.created', attempts: 1, last_status_code: 200 });
    expect(Number(delivery.sequence)).toBe(body.sequence);
    expect(Number(delivery.event_id)).toBe(Number(row.id));
    const attempts = await knex('webhook_delivery_attempts').where({ delivery_id: attempt.id });
    expect(attempts).toEqual([expect.objectContaining({ status_code: 200, error: null })]);
  });

  test('an event nobody subscribes to is not delivered but takes its sequence number', async () => {
    const first = await storedEvent(
      knex,
      'identity.created',
      await createIdentity(api, { name: 'before-other', isAdmin: false }),
    );
    await inTransaction(knex, (trx, afterCommit) =>
      server.app.services.audit.store(trx, afterCommit, { event: 'other.thing', identityId: 'unsubscribed' }),
    );
    const second = await storedEvent(
      knex,
      'identity.created',
      await createIdentity(api, { name: 'after-other', isAdmin: false }),
    );
    const [a, b] = [await deliveryOf(main, first.id), await deliveryOf(main, second.id)];
    expect(bodyOf(b).sequence).toBeGreaterThanOrEqual(bodyOf(a).sequence + 2);
    expect(receiver.attemptsAt(main).filter((x) => bodyOf(x).type === 'other.thing')).toEqual([]);
  });

  test('a rolled-back change is never delivered', async () => {
    await expect(
      inTransaction(knex, async (trx, afterCommit) => {
        await server.app.services.audit.store(trx, afterCommit, {
          event: 'identity.updated',
          identityId: 'rolled-back',
        });
        throw new Error('the change failed after its event was stored');
      }),
    ).rejects.toThrow('the change failed');
    // A later committed change arrives: the fan-out has passed the rolled-back one's place.
    const later = await storedEvent(
      knex,
      'identity.created',
      await createIdentity(api, { name: 'after-rollback', isAdmin: false }),
    );
    await deliveryOf(main, later.id);
    expect(receiver.state.attempts.filter((a) => bodyOf(a).data.identityId === 'rolled-back')).toEqual([]);
    expect(await knex('webhook_deliveries').where('payload', 'like', '%rolled-back%')).toEqual([]);
  });

  test('a disabled webhook gets nothing, whatever disabled it; enabled again, it gets the events that follow', async () => {
    const byAdmin = await createWebhook({
      name: 'by-admin',
      url: receiver.urlFor('by-admin'),
      events: ['*'],
      enabled: false,
    });
    const failing = await insertWebhook(knex, {
      name: 'failing',
      url: receiver.urlFor('failing'),
      enabled: false,
      disabledReason: 'failing',
    });
    receiver.state.secrets.set('failing', failing.secret);
    const row = await storedEvent(
      knex,
      'identity.created',
      await createIdentity(api, { name: 'while-disabled', isAdmin: false }),
    );
    await deliveryOf(main, row.id);
    expect(await knex('webhook_deliveries').where({ webhook_id: byAdmin.id })).toEqual([]);
    expect(await knex('webhook_deliveries').where({ webhook_id: failing.id })).toEqual([]);

    expect((await api.patch(`/webhooks/${failing.id}`, { body: { enabled: true } })).status).toBe(200);
    const next = await storedEvent(
      knex,
      'identity.created',
      await createIdentity(api, { name: 'after-enabled', isAdmin: false }),
    );
    const sent = await deliveryOf('failing', next.id);
    expect(sent.verifiedWith).toEqual(['failing']);
    // The event of the disabled time is never sent to it.
    expect(receiver.attemptsAt('failing').filter((a) => bodyOf(a).data.id === row.id)).toEqual([]);
  });

  test('after a rotation both signatures are sent, each verifying with its own secret, until the old one expires', async () => {
    const rotated = await createWebhook({
      name: 'rotated',
      url: receiver.urlFor('rotated'),
      events: ['identity.created'],
    });
    const rotation = await api.post(`/webhooks/${rotated.id}/rotate-secret`);
    expect(rotation.status).toBe(200);
    receiver.state.secrets.set('current', rotation.body.data.secret).set('previous', rotated.secret);
    const during = await storedEvent(
      knex,
      'identity.created',
      await createIdentity(api, { name: 'during-rotation', isAdmin: false }),
    );
    const both = await deliveryOf('rotated', during.id);
    expect(both.signatures).toHaveLength(2);
    expect(both.signatureVerifiedWith).toEqual([['current'], ['previous']]);
    expect(both.verifiedWith.sort()).toEqual(['current', 'previous']);

    // A day later the previous secret no longer signs.
    await knex('webhooks')
      .where({ id: rotated.id })
      .update({ previous_secret_expires_at: new Date(Date.now() - 1000) });
    const after = await storedEvent(
      knex,
      'identity.created',
      await createIdentity(api, { name: 'after-rotation', isAdmin: false }),
    );
    const one = await deliveryOf('rotated', after.id);
    expect(one.signatureVerifiedWith).toEqual([['current']]);
    expect(one.verifiedWith).toEqual(['current']);
  });
});
