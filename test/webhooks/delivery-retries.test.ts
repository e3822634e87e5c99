import { afterAll, afterEach, beforeAll, describe, expect, jest, test } from '@jest/globals';
import type { Knex } from 'knex';
import { AUDIT_EVENT_COLUMNS, type AuditEventRow } from '../../src/repositories/audit-event-row.js';
import { auditEventView } from '../../src/services/audit-event-view.js';
import { clockAt, startClock } from '../helpers/movable-clock.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  startWebhookReceiver,
  type ReceivedAttempt,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js';
import { fanoutCaughtUp, insertWebhook } from '../helpers/webhook-rows.js';
import { createIdentity, managementApi } from '../identities/identity-fixtures.js';

const HOUR = 3600;

const bodyOf = (a: ReceivedAttempt) =>
  JSON.parse(a.body) as { type: string; timestamp: string; sequence: number; data: Record<string, any> };

/**
 * Retries, ordering and the 24-hour limits, on a moved clock (movable-clock.ts): the server reads
 * the same `Date`, so a retry hours away becomes due when the test moves the clock there.
 */
describe('webhook delivery: retries and the 24-hour limits', () => {
  let receiver: WebhookReceiver;
  let server: TestServer;
  let knex: Knex;
  /** Subscribed to every event. */
  const all = 'all';
  let allId: string;
  /** The last event stored before `all` was created. */
  let firstEventId: number;

  /** A management API with a fresh admin session: a moved clock ends older ones. */
  const api = async () => managementApi(server, await server.adminToken());
  const deliveriesOf = (webhookId: string) =>
    knex('webhook_deliveries').where({ webhook_id: webhookId }).orderBy('sequence');

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({ env: receiver.controllerEnv });
    knex = server.app.knex;
    await server.adminToken();
    await waitFor(() => fanoutCaughtUp(knex), { what: 'the fan-out to pass the events so far' });
    firstEventId = Number((await knex('audit_events').max('id as max').first())?.max ?? 0);
    const hook = await insertWebhook(knex, { name: all, url: receiver.urlFor(all), events: ['*'] });
    allId = hook.id;
    receiver.state.secrets.set(all, hook.secret);
  }, 180_000);
  afterEach(() => void jest.useRealTimers());
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  test('a receiver answering 503 for a while gets every event once it recovers: none lost, none invented, each attempt signed afresh', async () => {
    startClock();
    receiver.state.modes.set(all, 503);
    const admin = await api();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(await createIdentity(admin, { name: `retried-${i}`, isAdmin: false }));
    expect(
      (await admin.patch(`/identities/${ids[0]}`, { body: { roleAttributes: ['retried'] } })).status,
    ).toBe(200);
    expect((await admin.delete(`/identities/${ids[1]}`)).status).toBe(200);
    const stored: AuditEventRow[] = await knex('audit_events')
      .select(knex.raw(AUDIT_EVENT_COLUMNS))
      .where('id', '>', firstEventId)
      .orderByRaw('tx, id');
    expect(stored.map((r) => r.event)).toEqual(
      expect.arrayContaining(['identity.created', 'identity.deleted']),
    );

    // Three failed attempts each, the clock moved past every retry's time in between.
    for (let round = 1; round <= 3; round++) {
      await waitFor(
        async () => {
          const rows = await deliveriesOf(allId);
          return rows.length === stored.length && rows.every((d) => d.attempts >= round);
        },
        { what: `attempt ${round} of every delivery` },
      );
      clockAt(round * 600);
    }
    receiver.state.modes.set(all, 200);
    clockAt(HOUR);
    await waitFor(async () => (await deliveriesOf(allId)).every((d) => d.status === 'succeeded'), {
      what: 'every delivery to succeed',
    });

    const attempts = receiver.attemptsAt(all);
    const delivered = receiver.delivered(all);
    // Each event once, as stored (none lost, none invented), in sequence order by commit order.
    expect(delivered.map((a) => bodyOf(a).data).sort((x, y) => Number(x.id) - Number(y.id))).toEqual(
      [...stored].sort((x, y) => Number(x.id) - Number(y.id)).map(auditEventView),
    );
    const sequenceOf = new Map(delivered.map((a) => [bodyOf(a).data.id, bodyOf(a).sequence]));
    const sequences = stored.map((r) => sequenceOf.get(r.id)!);
    expect(sequences).toEqual([...sequences].sort((x, y) => x - y));
    expect(new Set(sequences).size).toBe(sequences.length);
    // Every attempt of one delivery: the same id and body, its own newer timestamp, a valid signature.
    for (const a of delivered) {
      const tries = attempts.filter((t) => t.id === a.id);
      expect(tries.map((t) => t.answered)).toEqual([503, 503, 503, 200]);
      expect(new Set(tries.map((t) => t.body))).toEqual(new Set([a.body]));
      const stamps = tries.map((t) => t.timestamp);
      expect(stamps).toEqual([...stamps].sort((x, y) => x - y));
      expect(new Set(stamps).size).toBe(stamps.length);
      for (const t of tries) expect(t.verifiedWith).toEqual([all]);
    }
    expect(new Set(attempts.map((a) => a.id)).size).toBe(stored.length);
    const recorded = await knex('webhook_delivery_attempts')
      .join('webhook_deliveries', 'webhook_deliveries.id', 'webhook_delivery_attempts.delivery_id')
      .where('webhook_deliveries.webhook_id', allId)
      .select('status_code');
    expect(recorded).toHaveLength(attempts.length);
    expect((await knex('webhooks').where({ id: allId }).first()).failing_since).toBeNull();
  });

  test('a webhook failing for 24 hours is disabled with a stored webhook.disabled event; past 24 hours a delivery fails unsent', async () => {
    startClock();
    const down = 'down';
    receiver.state.modes.set(down, 503);
    const hook = await insertWebhook(knex, {
      name: down,
      url: receiver.urlFor(down),
      events: ['identity.*'],
    });
    receiver.state.secrets.set(down, hook.secret);
    const failingSince = async () => (await knex('webhooks').where({ id: hook.id }).first()).failing_since;
    const attemptsOf = async (n: number) =>
      waitFor(
        async () => {
          const rows = await deliveriesOf(hook.id);
          return rows.length === n && rows.every((d) => d.attempts >= 1) && rows;
        },
        { what: `first attempts of ${n} deliveries` },
      );

    await createIdentity(await api(), { name: 'failing-first', isAdmin: false });
    await attemptsOf(1);
    const since = await failingSince();
    expect(since).not.toBeNull();
    // Half a day later: another event, failing too. Both keep being retried.
    clockAt(12 * HOUR);
    await createIdentity(await api(), { name: 'failing-second', isAdmin: false });
    await attemptsOf(2);
    expect(await failingSince()).toEqual(since);
    expect((await knex('webhooks').where({ id: hook.id }).first()).enabled).toBe(true);

    // A day after the first failure: the first delivery's window is over, the second's attempt
    // fails and the webhook is disabled.
    clockAt(24 * HOUR + 600);
    const disabled = await waitFor(
      async () => {
        const w = await knex('webhooks').where({ id: hook.id }).first();
        return w.enabled === false && w;
      },
      { what: 'the webhook to be disabled' },
    );
    expect(disabled.disabled_reason).toBe('failing');
    // Whichever of the two was tried last, the first is past its 24 hours: failed when the
    // webhook was disabled, if not by its own attempt.
    const [first, second] = await deliveriesOf(hook.id);
    expect(first).toMatchObject({ status: 'failed', last_error: 'the receiver answered 503' });
    expect(second).toMatchObject({ status: 'pending' });
    const events = await knex('audit_events')
      .select(knex.raw(AUDIT_EVENT_COLUMNS))
      .where({ event: 'webhook.disabled' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      identity_id: null,
      actor_id: null,
      request_id: null,
      source_address: null,
    });
    expect(events[0].details).toEqual({
      webhookId: hook.id,
      name: down,
      reason: 'failing',
      failingSince: new Date(since).toISOString(),
    });
    // The event itself is delivered like any other: to the webhook subscribed to everything.
    await waitFor(() => receiver.delivered(all).find((a) => bodyOf(a).type === 'webhook.disabled'), {
      what: 'the webhook.disabled event to be delivered',
    });

    // Disabled: the events of the time it is disabled are not queued for it, and what it had
    // pending is not sent.
    const sentBefore = receiver.attemptsAt(down).length;
    const third = await createIdentity(await api(), { name: 'while-failing', isAdmin: false });
    clockAt(30 * HOUR);
    // Sent to the other webhook, and not to this one.
    await waitFor(() => receiver.delivered(all).some((a) => bodyOf(a).data.identityId === third), {
      what: 'the third event at the other webhook',
    });
    await waitFor(() => fanoutCaughtUp(knex), { what: 'the fan-out to pass the third event' });
    expect(await deliveriesOf(hook.id)).toHaveLength(2);
    expect((await deliveriesOf(hook.id))[1]).toMatchObject({ status: 'pending' });

    // Enabled again two days on: every delivery still pending is past its 24 hours and fails unsent.
    receiver.state.modes.set(down, 200);
    clockAt(50 * HOUR);
    expect((await (await api()).patch(`/webhooks/${hook.id}`, { body: { enabled: true } })).status).toBe(200);
    const after = await deliveriesOf(hook.id);
    expect(after.map((d) => d.status)).toEqual(['failed', 'failed']);
    expect(after[1]).toMatchObject({ last_error: 'expired while the webhook was disabled' });
    // Once enabled, the webhook gets new events again.
    const fourth = await createIdentity(await api(), { name: 'after-enabling', isAdmin: false });
    await waitFor(() => receiver.delivered(down).find((a) => bodyOf(a).data.identityId === fourth), {
      what: 'the event after enabling',
    });
    expect(receiver.attemptsAt(down).filter((a) => bodyOf(a).data.identityId !== fourth)).toHaveLength(
      sentBefore,
    );
  });
});
