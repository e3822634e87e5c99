import type { Knex } from 'knex';

/**
 * The hourly ceiling on failed logins moves from one counter per identity to one per identity and
 * client address: a flood from one address must not refuse the right password from another
 * (docs/operations.md, failed password logins). The run of consecutive failures stays per identity.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('login_address_failures', (t) => {
    t.text('identity_id')
      .notNullable()
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('login_address_failures__identity_id_fk');
    t.text('client_address').notNullable();
    t.timestamp('window_started_at', { useTz: true }).notNullable();
    t.integer('in_window').notNullable();
    t.primary(['identity_id', 'client_address'], {
      constraintName: 'login_address_failures__identity_id_client_address_pk',
    });
    t.index(['window_started_at'], 'login_address_failures__window_started_at_index');
  });
  await knex.schema.alterTable('login_failures', (t) => {
    t.dropColumn('window_started_at');
    t.dropColumn('in_window');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('login_failures', (t) => {
    t.timestamp('window_started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.integer('in_window').notNullable().defaultTo(0);
  });
  await knex.schema.dropTableIfExists('login_address_failures');
}
