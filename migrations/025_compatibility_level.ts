import type { Knex } from 'knex';
import { raiseCompatibilityLevel } from '../src/db/compatibility-level.js';

/**
 * The schema compatibility level (docs/adr/0016-expand-contract-migrations.md): one row naming the
 * oldest migration that code must know to run on this database, why, and which release raised it.
 * From this migration on, an instance starts on a database that has later migrations it does not
 * know as long as its own newest migration is at or above the level; releases before it refuse
 * any unknown migration, so the level starts here.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('schema_compatibility', (t) => {
    t.integer('id').primary();
    t.text('level').notNullable();
    t.text('reason').notNullable();
    t.text('raised_by_version').nullable();
    t.timestamp('raised_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.check('id = 1');
  });
  await raiseCompatibilityLevel(knex, {
    level: '025_compatibility_level',
    reason:
      'releases before it refuse to start on a database that has migrations they do not know, ' +
      'so they cannot share it with this one',
    raisedByVersion: '0.2.0',
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('schema_compatibility');
}
