import type { Knex } from 'knex';

/**
 * Lease rows for "only one instance at a time" where session advisory locks are not available
 * (src/db/lease-lock.ts, which also creates this table itself because the migrations' own lock
 * needs it first; hence IF NOT EXISTS). The index serves the janitor's batches of ended TOTP
 * failure windows.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE IF NOT EXISTS instance_locks (
    name text PRIMARY KEY,
    holder text NOT NULL,
    expires_at timestamptz NOT NULL
  )`);
  await knex.raw('CREATE INDEX totp_failures__window_started_at_index ON totp_failures (window_started_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS totp_failures__window_started_at_index');
  await knex.schema.dropTableIfExists('instance_locks');
}
