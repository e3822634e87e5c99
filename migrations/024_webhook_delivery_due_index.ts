import type { Knex } from 'knex';

/**
 * Webhook delivery per webhook (docs/adr/0015-audit-events-and-webhooks.md):
 *
 * - `webhook_deliveries__webhook_due_index`: the pending deliveries of each webhook by when they
 *   are due. The claim walks it per enabled webhook, so that the backlog of a disabled webhook is
 *   never read, and enabling a webhook again reads its own rows only. It replaces the global due
 *   index, which nothing reads any more.
 * - `webhook_deliveries__claimed_index`: the deliveries holding (or having held) a claim, a few
 *   per webhook, so that the claim skips a webhook with a delivery in flight without reading its
 *   backlog.
 * - `webhook_deliveries__unsent_event_unique`: at most one unsent delivery of an event per
 *   webhook; a failed-login aggregate seen again by the fan-out updates it instead of adding one.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `CREATE INDEX webhook_deliveries__webhook_due_index ON webhook_deliveries (webhook_id, next_attempt_at)
     WHERE status = 'pending'`,
  );
  await knex.raw(
    `CREATE INDEX webhook_deliveries__claimed_index ON webhook_deliveries (webhook_id)
     WHERE claimed_until IS NOT NULL`,
  );
  await knex.raw(
    `CREATE UNIQUE INDEX webhook_deliveries__unsent_event_unique ON webhook_deliveries (webhook_id, event_id)
     WHERE status = 'pending' AND attempts = 0`,
  );
  await knex.raw('DROP INDEX webhook_deliveries__due_index');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    `CREATE INDEX webhook_deliveries__due_index ON webhook_deliveries (next_attempt_at)
     WHERE status = 'pending'`,
  );
  await knex.raw('DROP INDEX webhook_deliveries__unsent_event_unique');
  await knex.raw('DROP INDEX webhook_deliveries__claimed_index');
  await knex.raw('DROP INDEX webhook_deliveries__webhook_due_index');
}
