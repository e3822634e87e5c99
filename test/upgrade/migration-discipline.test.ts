import { describe, expect, test } from '@jest/globals';
import { BASELINE, checkMigration, checkMigrations } from '../../scripts/migration-discipline.js';

/** A migration's source around `up` (and `down`) bodies, as the migrations folder writes them. */
const migration = (
  up: string,
  down = "await knex.schema.dropTable('unused');",
) => `import type { Knex } from 'knex';
import { raiseCompatibilityLevel } from '../src/db/compatibility-level.js';

export async function up(knex: Knex): Promise<void> {
${up}
}

export async function down(knex: Knex): Promise<void> {
${down}
}
`;

const NAME = '031_contract_login_shadow';
const refusedConstructs = (source: string) =>
  checkMigration(NAME, source).map((m) => /^migration \S+ uses (.*?): it /.exec(m)?.[1]);

describe('the expand/contract check of migrations', () => {
  test('every migration after the baseline keeps to it', () => {
    expect(checkMigrations('migrations')).toEqual([]);
  });

  test('the baseline holds only the migrations that predate the rule', () => {
    expect(BASELINE.length).toBe(24);
    expect(BASELINE.every((name) => name <= '024_webhook_delivery_due_index')).toBe(true);
  });

  test('a migration that drops a column is refused, naming the migration, the construct and what to do', () => {
    const messages = checkMigration(
      NAME,
      migration(`await knex.schema.alterTable('login_failures', (t) => {
  t.dropColumn('in_window');
});`),
    );

    expect(messages).toEqual([
      `migration ${NAME} uses dropColumn: it drops a column they read or write while instances of the ` +
        'previous release still run during a rolling upgrade. Spread the change over two releases ' +
        '(expand: add the new, write both, read the new with a fallback; contract in the next release), ' +
        'or raise the compatibility level in this migration: raiseCompatibilityLevel(knex, { level, ' +
        `reason }) with level the expand migration if this is its contract step, else '${NAME}', and the ` +
        'reason older code cannot run on it; say so in the CHANGELOG ' +
        '(docs/adr/0016-expand-contract-migrations.md).',
    ]);
  });

  test('the same migration passes when it raises the compatibility level with a reason', () => {
    const source = migration(`await knex.schema.alterTable('login_failures', (t) => {
  t.dropColumn('in_window');
});
await raiseCompatibilityLevel(knex, {
  level: '${NAME}',
  reason: 'releases before it still count failures in ' + \`login_failures.in_window\`,
});`);

    expect(checkMigration(NAME, source)).toEqual([]);
  });

  test.each([
    ['an empty reason', "''"],
    ['a blank reason', "'   '"],
    ['a reason that is not written in the call', 'REASON'],
  ])('a level raised with %s does not count', (_, reason) => {
    const source = migration(`await knex.schema.dropTable('login_shadow');
await raiseCompatibilityLevel(knex, { level: '${NAME}', reason: ${reason} });`);

    expect(refusedConstructs(source)).toEqual(['dropTable']);
  });

  test.each([
    ['knex renameTable', "await knex.schema.renameTable('login_shadow', 'login_decoys');", 'renameTable'],
    ['knex dropTableIfExists', "await knex.schema.dropTableIfExists('login_shadow');", 'dropTable'],
    [
      'knex renameColumn in table()',
      "await knex.schema.table('cas', (t) => t.renameColumn('name', 'label'));",
      'renameColumn',
    ],
    [
      'knex alter()',
      "await knex.schema.alterTable('cas', (t) => { t.bigInteger('serial').alter(); });",
      '.alter()',
    ],
    [
      'knex dropNullable',
      "await knex.schema.alterTable('cas', (t) => { t.dropNullable('label'); });",
      'dropNullable',
    ],
    [
      'knex notNullable() in alterTable without defaultTo()',
      "await knex.schema.alterTable('cas', (t) => {\n  t.text('label').notNullable();\n});",
      'NOT NULL without a default on an existing table',
    ],
    ['raw DROP COLUMN', "await knex.raw('ALTER TABLE cas DROP COLUMN label');", 'DROP COLUMN'],
    ['raw DROP TABLE in a template literal', 'await knex.raw(`DROP TABLE login_shadow`);', 'DROP TABLE'],
    ['raw RENAME COLUMN', "await knex.raw('ALTER TABLE cas RENAME COLUMN name TO label');", 'RENAME'],
    [
      'raw ALTER COLUMN … TYPE',
      "await knex.raw('ALTER TABLE cas ALTER COLUMN serial TYPE bigint');",
      'ALTER COLUMN … TYPE',
    ],
    [
      'raw SET DATA TYPE',
      "await knex.raw('ALTER TABLE cas ALTER serial SET DATA TYPE bigint');",
      'SET DATA TYPE',
    ],
    [
      'raw SET NOT NULL',
      "await knex.raw('ALTER TABLE cas ALTER COLUMN label SET NOT NULL');",
      'SET NOT NULL',
    ],
    [
      'raw ADD COLUMN … NOT NULL without DEFAULT',
      "await knex.raw('ALTER TABLE cas ADD COLUMN label text NOT NULL, ADD COLUMN note text DEFAULT NULL');",
      'NOT NULL without a default on an existing table',
    ],
    [
      'raw ADD … NOT NULL over concatenated strings',
      "const table = 'cas';\nawait knex.raw(`ALTER TABLE ${table} ` + 'ADD label text NOT NULL');",
      'NOT NULL without a default on an existing table',
    ],
  ])('%s is refused', (_, up, construct) => {
    expect(refusedConstructs(migration(up))).toEqual([construct]);
  });

  test.each([
    [
      'a new table with NOT NULL columns',
      "await knex.schema.createTable('labels', (t) => {\n  t.text('id').primary();\n  t.text('label').notNullable();\n});",
    ],
    [
      'a NOT NULL column with a default on an existing table',
      "await knex.schema.alterTable('cas', (t) => {\n  t.text('label').notNullable().defaultTo('');\n});",
    ],
    [
      'raw NOT NULL with a default',
      'await knex.raw("ALTER TABLE cas ADD COLUMN label text NOT NULL DEFAULT \'\'");',
    ],
    ['a nullable column', "await knex.schema.alterTable('cas', (t) => { t.text('label'); });"],
    ['a dropped index', "await knex.raw('DROP INDEX cas__name_index');"],
    [
      'the constructs named in comments only',
      '// Not t.dropColumn(): the old release still reads it.\n/* DROP TABLE comes in the next release. */',
    ],
  ])('%s passes', (_, up) => {
    expect(checkMigration(NAME, migration(up))).toEqual([]);
  });

  test('what down() does is not checked: it only runs when going back on purpose', () => {
    const source = migration(
      "await knex.schema.createTable('labels', (t) => t.text('id'));",
      "await knex.schema.dropTable('labels');\nawait knex.raw('ALTER TABLE cas DROP COLUMN label');",
    );

    expect(checkMigration(NAME, source)).toEqual([]);
  });

  test('a helper outside up() that up() calls is checked', () => {
    const source = `${migration('await contract(knex);')}
async function contract(knex: Knex): Promise<void> {
  await knex.schema.alterTable('cas', (t) => t.dropColumn('name'));
}
`;

    expect(refusedConstructs(source)).toEqual(['dropColumn']);
  });
});
