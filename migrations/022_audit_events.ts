import type { Knex } from 'knex';

/**
 * Stored audit events (docs/operations.md, "Audit events"), inserted in the transaction of the
 * change they record. `tx` is the id of that transaction (`pg_current_xact_id()`): readers that
 * follow the trail order by `(tx, id)` and read only rows whose `tx` is below the oldest
 * transaction still running (`pg_snapshot_xmin(pg_current_snapshot())`), so an id taken early by a
 * transaction that commits late is never passed over (docs/adr/0015-audit-events-and-webhooks.md).
 *
 * Failed logins and failed second factors are aggregated: one row per event, outcome, method,
 * identity (none for an unknown username), address network and minute, found by `aggregate_key`
 * (src/services/attempt-aggregate-key.ts), whose `attempts` grows (and
 * whose `tx` moves to the updating transaction, so followers see the new count).
 * `identity_id` and `actor_id` carry no foreign key: the trail outlives what it names.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('audit_events', (t) => {
    t.bigIncrements('id').primary();
    t.specificType('tx', 'xid8').notNullable().defaultTo(knex.raw('pg_current_xact_id()'));
    t.timestamp('occurred_at', { useTz: true }).notNullable().defaultTo(knex.raw('clock_timestamp()'));
    t.timestamp('last_at', { useTz: true }).nullable();
    t.text('event').notNullable();
    t.text('outcome').nullable();
    t.text('identity_id').nullable();
    t.text('actor_id').nullable();
    t.text('source_address').nullable();
    t.text('request_id').nullable();
    t.integer('attempts').notNullable().defaultTo(1);
    t.text('aggregate_key').nullable().unique({ indexName: 'audit_events__aggregate_key_unique' });
    /** Every other field of the event (method, reason, cause, …), never a secret. */
    t.jsonb('details').notNullable().defaultTo('{}');
  });
  await knex.raw('CREATE INDEX audit_events__tx_id_index ON audit_events (tx, id)');
  for (const column of ['event', 'outcome', 'identity_id', 'actor_id', 'source_address']) {
    await knex.raw(`CREATE INDEX audit_events__${column}_tx_id_index ON audit_events (${column}, tx, id)`);
  }
  await knex.raw('CREATE INDEX audit_events__occurred_at_index ON audit_events (occurred_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('audit_events');
}
