import type { Knex } from 'knex';

/**
 * How many fully authenticated API sessions an identity of the policy may hold at once (0: no
 * limit), and what a login over the limit does: end the oldest session (`evictOldest`) or be
 * refused (`refuse`). Existing policies, `default` among them, keep no limit.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('auth_policies', (t) => {
    t.integer('sessions_max').notNullable().defaultTo(0);
    t.text('sessions_on_limit').notNullable().defaultTo('evictOldest');
  });
  await knex.raw(`ALTER TABLE auth_policies
    ADD CONSTRAINT auth_policies__sessions_max_check CHECK (sessions_max >= 0),
    ADD CONSTRAINT auth_policies__sessions_on_limit_check
      CHECK (sessions_on_limit IN ('evictOldest', 'refuse'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('auth_policies', (t) => {
    t.dropColumn('sessions_on_limit');
    t.dropColumn('sessions_max');
  });
}
