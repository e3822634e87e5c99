import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { deleteExpiredRows, JANITOR_BATCH } from '../../src/services/janitor.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

const DAY_MS = 86_400_000;

/**
 * The janitor's retention of the stored trail (`audit.retention`, here 7 days) and of webhook
 * deliveries (30 days), run as one pass at chosen instants over rows inserted with old times.
 */
describe('retention of audit events and webhook deliveries', () => {
  let server: TestServer;
  const knex = () => server.app.knex;
  const retention = () => server.app.config.audit.retention;

  beforeAll(async () => {
    server = await startTestServer({ env: { SVC_AUDIT_RETENTION: '7d' } });
  });
  afterAll(() => server.close());

  const eventsNamed = async (prefix: string) =>
    (
      (await knex()('audit_events').where('event', 'like', `${prefix}%`).orderBy('id').select('event')) as {
        event: string;
      }[]
    ).map((r) => r.event);

  test('events older than audit.retention go, aggregated rows by their first attempt; later passes take more', async () => {
    expect(retention()).toBe(7 * 86_400);
    const now = new Date();
    const ago = (ms: number) => new Date(now.getTime() - ms);
    const event = (name: string, occurredAt: Date, aggregated?: { lastAt: Date; attempts: number }) => ({
      event: name,
      occurred_at: occurredAt,
      last_at: aggregated?.lastAt ?? null,
      attempts: aggregated?.attempts ?? 1,
      details: '{}',
    });
    await knex()('audit_events').insert([
      event('retention.old', ago(8 * DAY_MS)),
      // Aggregated: first attempt just past the retention, the last one just within it.
      event('retention.aggregated', ago(7 * DAY_MS + 30_000), {
        lastAt: ago(7 * DAY_MS - 20_000),
        attempts: 4,
      }),
      event('retention.six-days', ago(6 * DAY_MS)),
      event('retention.recent', ago(60_000)),
    ]);

    const first = await deleteExpiredRows(knex(), now, undefined, retention());
    expect(first.auditEvents).toBe(2);
    expect(await eventsNamed('retention.')).toEqual(['retention.six-days', 'retention.recent']);

    // Two days later the six-day-old event is past the retention too.
    const later = await deleteExpiredRows(
      knex(),
      new Date(now.getTime() + 2 * DAY_MS),
      undefined,
      retention(),
    );
    expect(later.auditEvents).toBe(1);
    expect(await eventsNamed('retention.')).toEqual(['retention.recent']);
  });

  test('a backlog larger than a batch goes in one pass, batch after batch', async () => {
    const rows = 2 * JANITOR_BATCH + 123;
    await knex().raw(
      `insert into audit_events (event, occurred_at, details)
         select 'backlog.old', now() - interval '30 days', '{}' from generate_series(1, ?)`,
      [rows],
    );
    const pass = await deleteExpiredRows(knex(), new Date(), undefined, retention());
    expect(pass.auditEvents).toBe(rows);
    expect(await eventsNamed('backlog.')).toEqual([]);
  });

  test('webhook deliveries older than 30 days go with their attempts, whatever their state', async () => {
    const now = new Date();
    const ago = (ms: number) => new Date(now.getTime() - ms);
    await knex()('webhooks').insert({
      id: 'retention-hook',
      name: 'retention-hook',
      url: 'https://receiver.example/hook',
      events: JSON.stringify(['identity.created']),
      secret_sealed: 'not-a-real-sealed-secret',
      created_at: ago(40 * DAY_MS),
      updated_at: ago(40 * DAY_MS),
    });
    const delivery = (id: string, sequence: number, createdAt: Date, status: string) => ({
      id,
      webhook_id: 'retention-hook',
      event_id: sequence,
      event: 'identity.created',
      sequence,
      payload: '{}',
      status,
      created_at: createdAt,
    });
    await knex()('webhook_deliveries').insert([
      delivery('old-succeeded', 1, ago(31 * DAY_MS), 'succeeded'),
      delivery('old-pending', 2, ago(30 * DAY_MS + 60_000), 'pending'),
      delivery('young', 3, ago(29 * DAY_MS), 'failed'),
    ]);
    const attempt = (deliveryId: string, at: Date) => ({
      delivery_id: deliveryId,
      attempted_at: at,
      status_code: 500,
      duration_ms: 12,
      instance_id: 'test',
    });
    await knex()('webhook_delivery_attempts').insert([
      attempt('old-succeeded', ago(31 * DAY_MS)),
      attempt('old-succeeded', ago(31 * DAY_MS - 60_000)),
      attempt('young', ago(29 * DAY_MS)),
    ]);

    const pass = await deleteExpiredRows(knex(), now, undefined, retention());

    expect(pass.webhookDeliveries).toBe(2);
    expect(await knex()('webhook_deliveries').pluck('id')).toEqual(['young']);
    expect(await knex()('webhook_delivery_attempts').pluck('delivery_id')).toEqual(['young']);
    // The subscription itself is no delivery: it stays.
    expect(await knex()('webhooks').pluck('id')).toEqual(['retention-hook']);
  });
});
