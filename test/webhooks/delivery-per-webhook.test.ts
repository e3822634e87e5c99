import { afterAll, afterEach, beforeAll, describe, expect, jest, test } from '@jest/globals';
import type { Knex } from 'knex';
import { clockAt, startClock } from '../helpers/movable-clock.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  startWebhookReceiver,
  type ReceivedAttempt,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js';
import { fanoutCaughtUp, insertWebhook } from '../helpers/webhook-rows.js';
import {
  createIdentity,
  enrolledUpdbUser,
  managementApi,
  passwordLogin,
  type ManagementApi,
} from '../identities/identity-fixtures.js';

const bodyOf = (a: ReceivedAttempt | { payload: string }) =>
  JSON.parse('body' in a ? a.body : a.payload) as { type: string; data: Record<string, any> };

/**
 * Delivery per webhook: a disabled webhook collects nothing, a failed-login aggregate is one
 * delivery, and a receiver that hangs holds one send, not the instance's.
 */
describe('webhook delivery per webhook', () => {
  let receiver: WebhookReceiver;
  let server: TestServer;
  let knex: Knex;
  let api: ManagementApi;

  const deliveriesOf = (webhookId: string) =>
    knex('webhook_deliveries').where({ webhook_id: webhookId }).orderBy('sequence');
  async function hook(
    name: string,
    events: string[],
    extra: { enabled?: boolean; disabledReason?: string } = {},
  ) {
    const created = await insertWebhook(knex, { name, url: receiver.urlFor(name), events, ...extra });
    receiver.state.secrets.set(name, created.secret);
    return created.id;
  }

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({ env: receiver.controllerEnv });
    knex = server.app.knex;
    api = managementApi(server, await server.adminToken());
    await waitFor(() => fanoutCaughtUp(knex), { what: 'the fan-out to pass the events so far' });
  }, 180_000);
  afterEach(() => void jest.useRealTimers());
  afterAll(async () => {
    receiver?.release();
    await server?.close();
    await receiver?.close();
  });

  test('a disabled webhook gets no deliveries; an admin disabling it clears the failure state; enabled, it gets what was pending when it was disabled', async () => {
    const id = await hook('paused', ['identity.*'], { enabled: false, disabledReason: 'failing' });
    await knex('webhooks')
      .where({ id })
      .update({ failing_since: new Date(Date.now() - 3600_000) });
    // Pending when it was disabled: sent once it is enabled again.
    const kept = JSON.stringify({
      type: 'identity.created',
      timestamp: new Date().toISOString(),
      sequence: 0,
      data: { kept: true },
    });
    await knex('webhook_deliveries').insert({
      id: 'msg_keptwhiledisabled',
      webhook_id: id,
      event_id: 0,
      event: 'identity.created',
      sequence: 0,
      payload: kept,
      status: 'pending',
      attempts: 0,
      created_at: new Date(),
      next_attempt_at: new Date(),
    });

    const during = await createIdentity(api, { name: 'while-paused', isAdmin: false });
    await waitFor(() => fanoutCaughtUp(knex), { what: 'the fan-out to pass the event' });
    expect((await deliveriesOf(id)).map((d) => d.id)).toEqual(['msg_keptwhiledisabled']);

    expect((await api.patch(`/webhooks/${id}`, { body: { enabled: false } })).status).toBe(200);
    expect(await knex('webhooks').where({ id }).first()).toMatchObject({
      enabled: false,
      disabled_reason: null,
      failing_since: null,
    });

    expect((await api.patch(`/webhooks/${id}`, { body: { enabled: true } })).status).toBe(200);
    await waitFor(() => receiver.delivered('paused').length === 1, { what: 'the kept delivery' });
    const after = await createIdentity(api, { name: 'after-paused', isAdmin: false });
    await waitFor(() => receiver.delivered('paused').some((a) => bodyOf(a).data.identityId === after), {
      what: 'the event after enabling',
    });
    const sent = receiver.delivered('paused').map((a) => bodyOf(a).data);
    expect(sent[0]).toEqual({ kept: true });
    expect(sent.some((d) => d.identityId === during)).toBe(false);
    await knex('webhooks').where({ id }).delete();
  });

  test('a hanging receiver holds one send: a healthy webhook gets all its deliveries meanwhile', async () => {
    receiver.state.modes.set('hanging', 'hang');
    const hanging = await hook('hanging', ['identity.*']);
    const healthy = await hook('healthy', ['identity.*']);
    const ids: string[] = [];
    let mostHung = 0;
    const hungNow = () => receiver.attemptsAt('hanging').filter((a) => a.answered === 'hung').length;
    for (let i = 0; i < 6; i++) {
      ids.push(await createIdentity(api, { name: `fair-${i}`, isAdmin: false }));
      mostHung = Math.max(mostHung, hungNow());
    }
    await waitFor(
      () => {
        mostHung = Math.max(mostHung, hungNow());
        const got = new Set(receiver.delivered('healthy').map((a) => bodyOf(a).data.identityId));
        return ids.every((i) => got.has(i));
      },
      { what: 'every delivery to the healthy webhook' },
    );
    mostHung = Math.max(mostHung, hungNow());
    expect(mostHung).toBe(1);
    expect(receiver.delivered('hanging')).toHaveLength(0);
    await knex('webhooks').whereIn('id', [hanging, healthy]).delete();
    receiver.state.modes.delete('hanging');
    receiver.release();
  });

  test('20 wrong passwords are one delivery per aggregated row, sent once its minute has closed, with every attempt counted', async () => {
    const policy = await api.post('/auth-policies', {
      body: { name: 'no-lockout', primary: { updb: { maxAttempts: 0 } } },
    });
    expect(policy.status).toBe(201);
    const user = await enrolledUpdbUser(server, api, 'guessed-webhook-user', {
      authPolicyId: policy.body.data.id,
    });
    const id = await hook('logins', ['auth.login']);
    const { rows: now } = await knex.raw('SELECT extract(second FROM clock_timestamp())::float8 AS s');
    if (Number(now[0].s) > 40) await new Promise((r) => setTimeout(r, (60 - Number(now[0].s)) * 1000 + 100));
    for (let i = 0; i < 20; i++) {
      expect((await passwordLogin(server, user.username, `Wrong-Password-${i}-x`)).status).toBe(401);
    }
    await waitFor(() => fanoutCaughtUp(knex), { what: 'the fan-out to pass the failures' });
    const stored = await knex('audit_events')
      .where({ event: 'auth.login', identity_id: user.id, outcome: 'failure' })
      .orderBy('id')
      .select('id', 'attempts');
    const failures = (await deliveriesOf(id)).filter((d) => bodyOf(d).data.outcome === 'failure');
    // One delivery per row (one row unless the burst crossed a minute), its body the row's latest.
    expect(failures).toHaveLength(stored.length);
    expect(failures.map((d) => bodyOf(d).data.attempts)).toEqual(stored.map((r) => r.attempts));
    expect(stored.reduce((n, r) => n + Number(r.attempts), 0)).toBe(20);

    // Once the minute has closed, each is sent, once.
    startClock();
    clockAt(130);
    await waitFor(
      () =>
        receiver.delivered('logins').filter((a) => bodyOf(a).data.outcome === 'failure').length ===
        stored.length,
      { what: 'the aggregated deliveries' },
    );
    const sent = receiver.delivered('logins').filter((a) => bodyOf(a).data.outcome === 'failure');
    expect(sent.map((a) => bodyOf(a).data.attempts)).toEqual(stored.map((r) => r.attempts));
    expect(receiver.attemptsAt('logins').filter((a) => bodyOf(a).data.outcome === 'failure')).toHaveLength(
      stored.length,
    );
  }, 180_000);
});
