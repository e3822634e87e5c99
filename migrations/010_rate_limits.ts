import type { Knex } from 'knex';

/**
 * Per-address request counts shared by every instance (`rateLimits.store: postgres`), in the
 * layout rate-limiter-flexible's PostgreSQL store reads and writes: one row per limiter and
 * address, its points in the current window and when that window ends (epoch milliseconds).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('rate_limits', (t) => {
    t.string('key', 255).primary({ constraintName: 'rate_limits__key_pk' });
    t.integer('points').notNullable().defaultTo(0);
    t.bigInteger('expire');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('rate_limits');
}
