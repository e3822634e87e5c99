import type { Knex } from 'knex';

/**
 * Enrollment tokens are kept sealed with the master key (`token_sealed`, shown again to admins)
 * and found by a keyed hash (`token_hash`), never as they are (docs/adr/0004-hashed-token-ids.md).
 * A migration has no master key, so existing plain tokens stay in `token` until the service
 * converts them at start (src/services/enrollment-tokens.ts); new rows leave `token` null.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('enrollments', (t) => {
    t.text('token_hash').unique({ indexName: 'enrollments__token_hash_unique' });
    t.text('token_sealed');
    t.setNullable('token');
  });
}

export async function down(knex: Knex): Promise<void> {
  // Rows created since cannot be turned back into plain tokens without the master key.
  await knex('enrollments').whereNull('token').delete();
  await knex.schema.alterTable('enrollments', (t) => {
    t.dropNullable('token');
    t.dropUnique(['token_hash'], 'enrollments__token_hash_unique');
    t.dropColumn('token_sealed');
    t.dropColumn('token_hash');
  });
}
