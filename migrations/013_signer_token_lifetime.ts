import type { Knex } from 'knex';

/**
 * The longest lifetime a signer's JWTs may claim (`exp − iat`, or `exp − now` without `iat`): a
 * JWT minted to last years is a standing credential, not a login. Existing signers get the
 * default of one day.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('external_jwt_signers', (t) => {
    t.integer('max_token_lifetime_minutes').notNullable().defaultTo(1440);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('external_jwt_signers', (t) => {
    t.dropColumn('max_token_lifetime_minutes');
  });
}
