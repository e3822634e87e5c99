import type { Knex } from 'knex';

/**
 * Where an API session came from, for admins and identities looking at who is signed in
 * (docs/operations.md, "Seeing who is signed in"): the primary login method (`password`, `cert`,
 * `ext-jwt`) and the client address of the request that opened the session, as the request log
 * writes it. Null for sessions opened before they were recorded.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_sessions', (t) => {
    t.text('auth_method');
    t.text('ip_address');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_sessions', (t) => {
    t.dropColumn('auth_method');
    t.dropColumn('ip_address');
  });
}
