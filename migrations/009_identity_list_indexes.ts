import type { Knex } from 'knex';

/**
 * The identity list stays proportional to its page, not to the table:
 * - `name contains "x"` is an `ILIKE '%x%'`, which a B-tree cannot serve; a trigram GIN index can
 *   (pg_trgm; the embedded database loads the same extension, see src/db/create-database.ts).
 * - `meta.pagination.totalCount` of an unfiltered list is exact; `count(*)` reads every row, so the
 *   number of identities is kept in `table_row_counts` by statement-level triggers instead. They
 *   run inside the writing transaction, so the count is exact under MVCC; concurrent creations of
 *   identities queue on that one row until commit, which identity creation can afford.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create extension if not exists pg_trgm');
  await knex.raw('create index identities__name_trgm_index on identities using gin (name gin_trgm_ops)');

  await knex.schema.createTable('table_row_counts', (t) => {
    t.text('table_name').primary({ constraintName: 'table_row_counts__table_name_pk' });
    t.bigInteger('row_count').notNullable();
  });
  await knex.raw(`
    create function table_row_counts__after_insert() returns trigger language plpgsql as $$
    begin
      update table_row_counts set row_count = row_count + (select count(*) from new_rows)
        where table_name = tg_table_name;
      return null;
    end $$`);
  await knex.raw(`
    create function table_row_counts__after_delete() returns trigger language plpgsql as $$
    begin
      update table_row_counts set row_count = row_count - (select count(*) from old_rows)
        where table_name = tg_table_name;
      return null;
    end $$`);
  await knex.raw(`
    create function table_row_counts__after_truncate() returns trigger language plpgsql as $$
    begin
      update table_row_counts set row_count = 0 where table_name = tg_table_name;
      return null;
    end $$`);
  await knex.raw(`
    create trigger identities__count_insert after insert on identities
      referencing new table as new_rows for each statement
      execute function table_row_counts__after_insert()`);
  await knex.raw(`
    create trigger identities__count_delete after delete on identities
      referencing old table as old_rows for each statement
      execute function table_row_counts__after_delete()`);
  await knex.raw(`
    create trigger identities__count_truncate after truncate on identities
      for each statement execute function table_row_counts__after_truncate()`);
  // Seeded after the triggers exist, in this transaction: no identity is counted twice or missed.
  await knex.raw(
    `insert into table_row_counts (table_name, row_count) select 'identities', count(*) from identities`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop trigger identities__count_truncate on identities');
  await knex.raw('drop trigger identities__count_delete on identities');
  await knex.raw('drop trigger identities__count_insert on identities');
  await knex.raw('drop function table_row_counts__after_truncate()');
  await knex.raw('drop function table_row_counts__after_delete()');
  await knex.raw('drop function table_row_counts__after_insert()');
  await knex.schema.dropTable('table_row_counts');
  await knex.raw('drop index identities__name_trgm_index');
}
