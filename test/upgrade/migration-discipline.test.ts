import { describe, expect, test } from '@jest/globals';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  checkMigration,
  checkMigrations,
  findInMigration,
  inBaseline,
  type MigrationContext,
} from '../../scripts/migration-discipline.js';
import { migrationSource } from '../../src/db/migration-source.js';

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
const EXPAND = '028_expand_login_shadow';
/** The folder as these fixtures see it: the real migrations, an expand step, the one checked, a later one. */
const CONTEXT: MigrationContext = {
  migrations: [
    ...readdirSync('migrations').map((file) => basename(file, '.ts')),
    EXPAND,
    NAME,
    '033_later_change',
  ],
  raisedBefore: '025_compatibility_level',
};
const refusedConstructs = (source: string) =>
  findInMigration(NAME, source, CONTEXT).constructs.map((c) => c.name);
const DROP = "await knex.schema.alterTable('login_failures', (t) => {\n  t.dropColumn('in_window');\n});";
/** A raise with the given properties written in the call, after dropping a column. */
const raising = (properties: string) =>
  migration(`${DROP}\nawait raiseCompatibilityLevel(knex, { ${properties} });`);
const REASON = "reason: 'releases before it still count failures in login_failures.in_window'";

describe('the migrations folder', () => {
  test('every migration in it is registered in the migration source, in the order knex runs them', async () => {
    const files = readdirSync('migrations')
      .filter((file) => file.endsWith('.ts'))
      .map((file) => basename(file, '.ts'))
      .sort();
    const registered = await migrationSource.getMigrations([]);

    expect(registered).toEqual(files);
    for (const name of registered)
      expect(await migrationSource.getMigration(name)).toBe(await import(`../../migrations/${name}.js`));
  });
});

describe('the expand/contract check of migrations', () => {
  test('every migration after the baseline keeps to it', () => {
    expect(checkMigrations('migrations')).toEqual([]);
  });

  test('the baseline is the migrations up to 024_webhook_delivery_due_index, which predate the rule', () => {
    expect(inBaseline('024_webhook_delivery_due_index')).toBe(true);
    expect(inBaseline('001_foundation')).toBe(true);
    expect(inBaseline('025_compatibility_level')).toBe(false);
    expect(inBaseline('024_webhook_delivery_due_index_2')).toBe(false);
  });

  test('a migration is refused in one message naming the previous release, every construct and what to do', () => {
    const messages = checkMigration(
      NAME,
      migration(`${DROP}\nawait knex.raw('DROP TABLE login_shadow');`),
      CONTEXT,
    );

    expect(messages).toEqual([
      `migration ${NAME} breaks instances of the previous release, which keep running on the migrated ` +
        'database during a rolling upgrade:\n' +
        '  - dropColumn: drops a column they read or write\n' +
        '  - DROP TABLE: drops a table they use\n' +
        'Either spread the change over two releases (expand, then contract in the next one: ' +
        'docs/adr/0016-expand-contract-migrations.md), or raise the compatibility level in this ' +
        'migration with the reason older releases cannot run on it: raiseCompatibilityLevel(knex, ' +
        '{ level, reason, raisedByVersion }), level being the expand migration for a contract step, else ' +
        `'${NAME}'; and say in the CHANGELOG which releases it refuses.`,
    ]);
  });

  test.each([
    ['itself', NAME],
    ['its expand migration', EXPAND],
  ])('the same migration passes when it raises the level to %s with a reason and its release', (_, level) => {
    const source = migration(`${DROP}
await raiseCompatibilityLevel(knex, {
  level: '${level}',
  reason: 'releases before it still count failures in ' + \`login_failures.in_window\`,
  raisedByVersion: '0.3.0',
});`);

    expect(checkMigration(NAME, source, CONTEXT)).toEqual([]);
  });

  test('a raise that refuses no one is refused with the construct, saying what is wrong with it', () => {
    const messages = checkMigration(
      NAME,
      raising(`level: '025_compatibility_level', ${REASON}, raisedByVersion: '0.3.0'`),
      CONTEXT,
    );

    expect(messages).toHaveLength(1);
    expect(messages[0]!.split('\n')).toEqual([
      `migration ${NAME} breaks instances of the previous release, which keep running on the migrated ` +
        'database during a rolling upgrade:',
      '  - dropColumn: drops a column they read or write',
      'Its raiseCompatibilityLevel call does not count:',
      "  - its level '025_compatibility_level' is not above '025_compatibility_level', which an earlier " +
        'migration raises it to, so it refuses no release that was not refused already',
      expect.stringMatching(/^Either spread the change over two releases/),
    ]);
  });

  test.each([
    [
      'at the level an earlier migration raised to',
      "level: '025_compatibility_level'",
      "its level '025_compatibility_level' is not above '025_compatibility_level', which an earlier migration raises it to, so it refuses no release that was not refused already",
    ],
    [
      'below the level an earlier migration raised to',
      "level: '001_foundation'",
      "its level '001_foundation' is not above '025_compatibility_level', which an earlier migration raises it to, so it refuses no release that was not refused already",
    ],
    [
      'to no migration in the folder',
      "level: '030_missing'",
      "its level '030_missing' is no migration in migrations/",
    ],
    [
      'past the migration itself',
      "level: '033_later_change'",
      "its level '033_later_change' sorts after the migration itself",
    ],
    [
      'to a level not written in the call',
      'level: LEVEL',
      'its level is not written as a string literal in the call',
    ],
    [
      'to a level built in a template',
      'level: `${EXPAND}`',
      'its level is not written as a string literal in the call',
    ],
    ['to a level given by shorthand', 'level', 'its level is not written as a string literal in the call'],
  ])('a raise %s does not count', (_, level, problem) => {
    const found = findInMigration(NAME, raising(`${level}, ${REASON}, raisedByVersion: '0.3.0'`), CONTEXT);

    expect(found.raiseProblems).toEqual([problem]);
    expect(found.constructs.map((c) => c.name)).toEqual(['dropColumn']);
  });

  test.each([
    ['without the release', ''],
    ['with a release that is not a version', ", raisedByVersion: 'next'"],
    ['with a release not written in the call', ', raisedByVersion: controllerVersion'],
    ['with an unknown release', ', raisedByVersion: null'],
  ])('a raise %s does not count', (_, version) => {
    const found = findInMigration(NAME, raising(`level: '${NAME}', ${REASON}${version}`), CONTEXT);

    expect(found.raiseProblems).toEqual([
      'its raisedByVersion is not written as the version (semver string literal) of the release it ships in',
    ]);
    expect(found.constructs.map((c) => c.name)).toEqual(['dropColumn']);
  });

  test.each([
    ['an empty reason', "''"],
    ['a blank reason', "'   '"],
    ['a reason that is not written in the call', 'REASON'],
  ])('a level raised with %s does not count', (_, reason) => {
    const found = findInMigration(
      NAME,
      raising(`level: '${NAME}', reason: ${reason}, raisedByVersion: '0.3.0'`),
      CONTEXT,
    );

    expect(found.raiseProblems).toEqual(['it has no reason written in the call']);
    expect(found.constructs.map((c) => c.name)).toEqual(['dropColumn']);
  });

  test('a raise that breaks nothing is still checked: a security fix raising to 001 refuses no one', () => {
    const source = migration(`await knex.schema.alterTable('cas', (t) => { t.text('binding'); });
await raiseCompatibilityLevel(knex, { level: '001_foundation', ${REASON}, raisedByVersion: '0.3.0' });`);

    expect(checkMigration(NAME, source, CONTEXT)).toEqual([
      `migration ${NAME} raises the compatibility level wrongly:\n` +
        "  - its level '001_foundation' is not above '025_compatibility_level', which an earlier migration " +
        'raises it to, so it refuses no release that was not refused already\n' +
        'The level names a migration in migrations/, above any an earlier migration raises to and at most ' +
        'this one; raisedByVersion is the release this migration ships in ' +
        '(docs/adr/0016-expand-contract-migrations.md).',
    ]);
  });

  test('the levels earlier migrations raise to are read from their source', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-migrations-'));
    const raise = (level: string) =>
      `await raiseCompatibilityLevel(knex, { level: '${level}', ${REASON}, raisedByVersion: '0.3.0' });`;
    writeFileSync(join(dir, '024_webhook_delivery_due_index.ts'), migration(''));
    writeFileSync(join(dir, '025_compatibility_level.ts'), migration(raise('025_compatibility_level')));
    writeFileSync(join(dir, '026_security_fix.ts'), migration(raise('026_security_fix')));
    writeFileSync(join(dir, '027_contract.ts'), migration(`${DROP}\n${raise('025_compatibility_level')}`));

    const messages = checkMigrations(dir);

    expect(messages).toHaveLength(1);
    expect(messages[0]).toContain(
      "its level '025_compatibility_level' is not above '026_security_fix', which an earlier migration raises it to",
    );
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
    [
      'knex defaultTo(null) with alter()',
      "await knex.schema.alterTable('cas', (t) => {\n  t.text('label').defaultTo(null).alter();\n});",
      ['.alter()', '.defaultTo(null)'],
    ],
    [
      'knex notNullable() with defaultTo(null) in alterTable',
      "await knex.schema.alterTable('cas', (t) => {\n  t.text('label').notNullable().defaultTo(null);\n});",
      ['.defaultTo(null)', 'NOT NULL without a default on an existing table'],
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
      'raw DROP DEFAULT',
      "await knex.raw('ALTER TABLE cas ALTER COLUMN label DROP DEFAULT');",
      'DROP DEFAULT',
    ],
    [
      'raw SET DEFAULT NULL',
      "await knex.raw('ALTER TABLE cas ALTER label SET DEFAULT NULL');",
      'DROP DEFAULT',
    ],
    [
      'knex defaultTo(null) in table() without alter()',
      "await knex.schema.table('cas', (t) => {\n  t.text('label').defaultTo(null);\n});",
      '.defaultTo(null)',
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
  ])('%s is refused', (_, up, constructs) => {
    expect(refusedConstructs(migration(up))).toEqual([constructs].flat());
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
    expect(checkMigration(NAME, migration(up), CONTEXT)).toEqual([]);
  });

  test('what down() does is not checked: it only runs when going back on purpose', () => {
    const source = migration(
      "await knex.schema.createTable('labels', (t) => t.text('id'));",
      "await knex.schema.dropTable('labels');\nawait knex.raw('ALTER TABLE cas DROP COLUMN label');",
    );

    expect(checkMigration(NAME, source, CONTEXT)).toEqual([]);
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
