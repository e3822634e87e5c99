import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Knex } from 'knex';
import { inTransaction } from '../../src/db/transaction.js';
import { AUDIT_EVENT_COLUMNS, type AuditEventRow } from '../../src/repositories/audit-event-row.js';
import { auditEventView } from '../../src/services/audit-event-view.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  startWebhookReceiver,
  type ReceivedAttempt,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js';
import { fanoutCaughtUp, insertWebhook } from '../helpers/webhook-rows.js';
import { createIdentity, managementApi } from '../identities/identity-fixtures.js';

const bodyOf = (a: ReceivedAttempt) =>
  JSON.parse(a.body) as { type: string; sequence: number; data: Record<string, any> };

/** Two instances on one PostgreSQL, both delivering from the one outbox. */
describeWithPostgres('webhook delivery: two instances on one database', () => {
  let receiver: WebhookReceiver;
  let a: TestServer;
  let b: TestServer;
  let knex: Knex;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    a = await startTestServer({ env: receiver.controllerEnv });
    b = await startTestServer({ env: receiver.controllerEnv, databaseUrl: a.databaseUrl });
    knex = a.app.knex;
    await waitFor(() => fanoutCaughtUp(knex), { what: 'the fan-out to pass the events so far' });
  }, 180_000);
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await receiver?.close();
  });

  test('each event is delivered once, never by both instances at the same time', async () => {
    const name = 'shared';
    const hook = await insertWebhook(knex, {
      name,
      url: receiver.urlFor(name),
      events: ['identity.created'],
    });
    receiver.state.secrets.set(name, hook.secret);
    receiver.state.delayMs = 50;
    const apis = [managementApi(a, await a.adminToken()), managementApi(b, await b.adminToken())];
    const ids = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        createIdentity(apis[i % 2]!, { name: `shared-${i}`, isAdmin: false }),
      ),
    );
    const stored: AuditEventRow[] = await knex('audit_events')
      .select(knex.raw(AUDIT_EVENT_COLUMNS))
      .where({ event: 'identity.created' })
      .whereIn('identity_id', ids)
      .orderByRaw('tx, id');
    expect(stored).toHaveLength(ids.length);
    await waitFor(
      async () => {
        const rows = await knex('webhook_deliveries').where({ webhook_id: hook.id });
        return rows.length === ids.length && rows.every((d) => d.status === 'succeeded');
      },
      { what: 'every delivery to succeed' },
    );

    expect(receiver.state.overlaps).toEqual([]);
    const delivered = receiver.delivered(name);
    expect(delivered.map((d) => d.verifiedWith)).toEqual(delivered.map(() => [name]));
    expect(new Set(delivered.map((d) => d.id)).size).toBe(delivered.length);
    expect(delivered.map((d) => bodyOf(d).data).sort((x, y) => Number(x.id) - Number(y.id))).toEqual(
      [...stored].sort((x, y) => Number(x.id) - Number(y.id)).map(auditEventView),
    );
    const sequenceOf = new Map(delivered.map((d) => [bodyOf(d).data.id, bodyOf(d).sequence]));
    const sequences = stored.map((r) => sequenceOf.get(r.id)!);
    expect(sequences).toEqual([...sequences].sort((x, y) => x - y));
    const attempts = await knex('webhook_delivery_attempts')
      .join('webhook_deliveries', 'webhook_deliveries.id', 'webhook_delivery_attempts.delivery_id')
      .where('webhook_deliveries.webhook_id', hook.id);
    expect(attempts).toHaveLength(ids.length);
  });

  test('an event whose transaction commits after a later event’s is delivered, numbered in commit order of its transaction', async () => {
    const name = 'commit-order';
    const hook = await insertWebhook(knex, { name, url: receiver.urlFor(name), events: ['identity.*'] });
    receiver.state.secrets.set(name, hook.secret);
    receiver.state.delayMs = 0;
    // A change on A that stores its event (taking the lower id) and then stays open.
    let finish!: () => void;
    const open = new Promise<void>((resolve) => (finish = resolve));
    const stored = new Promise<void>((resolve) => {
      void inTransaction(a.app.knex, async (trx, afterCommit) => {
        await a.app.services.audit.store(trx, afterCommit, {
          event: 'identity.updated',
          identityId: 'slow-change',
        });
        resolve();
        await open;
      });
    });
    await stored;
    // A later change on B, committed while the first is open.
    const later = await createIdentity(managementApi(b, await b.adminToken()), {
      name: 'quick-change',
      isAdmin: false,
    });
    // Both instances' fan-outs run a few times meanwhile (every second): a reader that followed
    // ids alone would deliver the later event now and pass over the open one's for good.
    await new Promise((r) => setTimeout(r, 2500));
    expect(receiver.delivered(name)).toEqual([]);
    finish();
    const deliveredFor = (identityId: string) =>
      waitFor(() => receiver.delivered(name).find((d) => bodyOf(d).data.identityId === identityId), {
        what: `the delivery of ${identityId}'s event`,
      });
    const [slow, quick] = [await deliveredFor('slow-change'), await deliveredFor(later)];
    expect(Number(bodyOf(slow).data.id)).toBeLessThan(Number(bodyOf(quick).data.id));
    expect(bodyOf(slow).sequence).toBeLessThan(bodyOf(quick).sequence);
    expect(slow.verifiedWith).toEqual([name]);
  });
});
