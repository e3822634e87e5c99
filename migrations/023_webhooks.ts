import type { Knex } from 'knex';

/**
 * Webhooks: signed deliveries of stored audit events (docs/adr/0015-audit-events-and-webhooks.md).
 *
 * - `webhooks`: a subscription; its signing secret sealed with the master key, and the previous
 *   secret (also sealed) until `previous_secret_expires_at` after a rotation. `failing_since` is
 *   the first failed attempt of the current run of failures (cleared by a success); a webhook
 *   failing for 24 hours is disabled (`disabled_reason = 'failing'`).
 * - `webhook_dispatch`: the one row of the fan-out: how far it has read the trail, in `(tx, id)`
 *   order, and the last `sequence` it gave an event.
 * - `webhook_deliveries`: the durable outbox, one row per webhook and event, with the body sent on
 *   every attempt. An instance claims a due row with a lease (`claimed_by`, `claimed_until`) in one
 *   statement, sends it with no row lock held, and acknowledges it in another; a lease that expires
 *   hands the delivery to any instance.
 * - `webhook_delivery_attempts`: each attempt's time, status code or error, and duration.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhooks', (t) => {
    t.text('id').primary();
    t.text('name').notNullable().unique({ indexName: 'webhooks__name_unique' });
    t.text('url').notNullable();
    t.jsonb('events').notNullable();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.text('secret_sealed').notNullable();
    t.text('previous_secret_sealed').nullable();
    t.timestamp('previous_secret_expires_at', { useTz: true }).nullable();
    t.timestamp('failing_since', { useTz: true }).nullable();
    t.text('disabled_reason').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.schema.createTable('webhook_dispatch', (t) => {
    t.integer('id').primary();
    t.specificType('last_tx', 'xid8').notNullable();
    t.bigInteger('last_event_id').notNullable();
    t.bigInteger('last_sequence').notNullable();
    t.check('id = 1');
  });
  // The fan-out starts at the trail's end as of this migration: events stored before it have no
  // subscriber yet.
  await knex.raw(
    `INSERT INTO webhook_dispatch (id, last_tx, last_event_id, last_sequence)
     SELECT 1, coalesce(max(tx), '0'::xid8), coalesce(max(id), 0), 0 FROM audit_events`,
  );
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.text('id').primary();
    t.text('webhook_id').notNullable().references('id').inTable('webhooks').onDelete('CASCADE');
    t.bigInteger('event_id').notNullable();
    t.text('event').notNullable();
    t.bigInteger('sequence').notNullable();
    /** The JSON body, `{type, timestamp, sequence, data}`, sent unchanged on every attempt. */
    t.text('payload').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('next_attempt_at', { useTz: true }).nullable();
    t.timestamp('last_attempt_at', { useTz: true }).nullable();
    t.integer('last_status_code').nullable();
    t.text('last_error').nullable();
    t.timestamp('succeeded_at', { useTz: true }).nullable();
    t.text('claimed_by').nullable();
    t.timestamp('claimed_until', { useTz: true }).nullable();
    t.check(`status IN ('pending', 'succeeded', 'failed')`);
    t.unique(['webhook_id', 'sequence'], { indexName: 'webhook_deliveries__webhook_id_sequence_unique' });
    t.index(['webhook_id', 'created_at'], 'webhook_deliveries__webhook_id_created_at_index');
    t.index(['created_at'], 'webhook_deliveries__created_at_index');
  });
  await knex.raw(
    `CREATE INDEX webhook_deliveries__due_index ON webhook_deliveries (next_attempt_at)
     WHERE status = 'pending'`,
  );
  await knex.schema.createTable('webhook_delivery_attempts', (t) => {
    t.bigIncrements('id').primary();
    t.text('delivery_id').notNullable().references('id').inTable('webhook_deliveries').onDelete('CASCADE');
    t.timestamp('attempted_at', { useTz: true }).notNullable();
    t.integer('status_code').nullable();
    t.text('error').nullable();
    t.integer('duration_ms').notNullable();
    t.text('instance_id').notNullable();
    t.index(['delivery_id', 'attempted_at'], 'webhook_delivery_attempts__delivery_id_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_delivery_attempts');
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhook_dispatch');
  await knex.schema.dropTable('webhooks');
}
