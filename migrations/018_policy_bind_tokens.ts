import type { Knex } from 'knex';

/**
 * Whether a certificate login of the policy's identities yields certificate-bound tokens (RFC 8705
 * §3, docs/operations.md "Certificate-bound tokens"). Existing policies keep unbound tokens until
 * an operator turns binding on; policies created from now on, and the `default` policy of a new
 * installation, bind.
 *
 * A new installation runs every migration in one transaction (knex does so when none opts out),
 * so its `default` policy was created in this very transaction: `created_at = now()` (the
 * transaction's start) holds for it and for no policy of an installation being upgraded. A later
 * migration that opts out of transactions would split that batch and make a new installation's
 * `default` unbound; test/bound-tokens/bind-tokens-migration.test.ts pins both cases. The column's
 * default of `true` is for rows written by hand: the repository always writes the field.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('auth_policies', (t) => {
    t.boolean('cert_bind_tokens').notNullable().defaultTo(false);
  });
  await knex.raw('ALTER TABLE auth_policies ALTER COLUMN cert_bind_tokens SET DEFAULT true');
  await knex.raw(
    "UPDATE auth_policies SET cert_bind_tokens = true WHERE id = 'default' AND created_at = now()",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('auth_policies', (t) => {
    t.dropColumn('cert_bind_tokens');
  });
}
