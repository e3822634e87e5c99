import type { Knex } from 'knex';

/**
 * `oidc_payloads.account_id`: the identity a row belongs to, so deleting an identity's grants,
 * tokens and unfinished logins is an index lookup, not a JSONB scan. `login_shadow`: a few rows an
 * unknown-username login writes to, so it costs the same commit as a counted failure.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oidc_payloads', (t) => {
    t.text('account_id');
  });
  await knex.raw(
    'CREATE INDEX oidc_payloads__account_id_index ON oidc_payloads (account_id) WHERE account_id IS NOT NULL',
  );
  await knex.schema.createTable('login_shadow', (t) => {
    t.integer('slot').primary({ constraintName: 'login_shadow__slot_pk' });
    t.timestamp('touched_at', { useTz: true }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('login_shadow');
  await knex.raw('DROP INDEX IF EXISTS oidc_payloads__account_id_index');
  await knex.schema.alterTable('oidc_payloads', (t) => {
    t.dropColumn('account_id');
  });
}
