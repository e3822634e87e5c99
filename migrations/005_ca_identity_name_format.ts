import type { Knex } from 'knex';

/**
 * `cas.identity_name_format`: how auto CA enrollment names the identity it creates. The default is
 * the one OpenZiti documents for its CAs, so existing rows behave as they would there.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('cas', (t) => {
    t.text('identity_name_format').notNullable().defaultTo('[caName]-[commonName]');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('cas', (t) => {
    t.dropColumn('identity_name_format');
  });
}
