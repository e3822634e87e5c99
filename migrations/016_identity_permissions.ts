import type { Knex } from 'knex';

/**
 * What an identity may do besides what isAdmin grants, e.g. `token-introspection` (a resource
 * server asking whether a token is live). A JSON array of names, empty for every existing identity;
 * only an admin sets it, through the management API.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('identities', (t) => {
    t.jsonb('permissions').notNullable().defaultTo(knex.raw(`'[]'::jsonb`));
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('identities', (t) => {
    t.dropColumn('permissions');
  });
}
