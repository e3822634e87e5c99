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
    [
      'raw ALTER COLUMN ?? TYPE with a knex identifier binding',
      "await knex.raw('ALTER TABLE cas ALTER COLUMN ?? TYPE bigint', ['serial']);",
      'ALTER COLUMN … TYPE',
    ],
    [
      'raw ALTER ${col} TYPE in a template',
      "const col = 'serial';\nawait knex.raw(`ALTER TABLE cas ALTER ${col} TYPE bigint`);",
      'ALTER COLUMN … TYPE',
    ],
    [
      'raw ALTER COLUMN "${col}" TYPE in a template',
      'const col = \'serial\';\nawait knex.raw(`ALTER TABLE cas ALTER COLUMN "${col}" TYPE bigint`);',
      'ALTER COLUMN … TYPE',
    ],
    [
      'raw DROP COLUMN after a \\n escape',
      "await knex.raw('ALTER TABLE cas\\nDROP COLUMN label');",
      'DROP COLUMN',
    ],
    [
      'raw TYPE after a \\n escape',
      "await knex.raw('ALTER TABLE cas ALTER COLUMN serial\\nTYPE bigint');",
      'ALTER COLUMN … TYPE',
    ],
    ['raw DROP\\tTABLE', "await knex.raw('DROP\\tTABLE login_shadow');", 'DROP TABLE'],
    ['raw DROP\\r\\n  TABLE', "await knex.raw('DROP\\r\\n  TABLE login_shadow');", 'DROP TABLE'],
    ['raw DROP/**/TABLE', "await knex.raw('DROP/**/TABLE login_shadow');", 'DROP TABLE'],
    [
      'knex dropTimestamps',
      "await knex.schema.alterTable('cas', (t) => { t.dropTimestamps(); });",
      'dropTimestamps',
    ],
    [
      "knex ['dropColumns'] in brackets",
      "await knex.schema.alterTable('cas', (t) => { t['dropColumns']('a', 'b'); });",
      'dropColumn',
    ],
    [
      "knex ['alter']() in brackets",
      "await knex.schema.alterTable('cas', (t) => { t.bigInteger('serial')['alter'](); });",
      '.alter()',
    ],
    [
      "knex schema['alterTable'] with notNullable()",
      "await knex.schema['alterTable']('cas', (t) => { t.text('label').notNullable(); });",
      'NOT NULL without a default on an existing table',
    ],
    [
      'knex dropUnique',
      "await knex.schema.alterTable('secrets', (t) => { t.dropUnique(['name']); });",
      'dropUnique',
    ],
    [
      'knex dropPrimary',
      "await knex.schema.alterTable('secrets', (t) => { t.dropPrimary(); });",
      'dropPrimary',
    ],
    [
      'knex dropForeign',
      "await knex.schema.alterTable('credentials', (t) => { t.dropForeign('identity_id'); });",
      'dropForeign',
    ],
    [
      'knex dropIndex of an index named as a unique one',
      "await knex.schema.alterTable('rate_limits', (t) => { t.dropIndex([], 'rate_limits_key_unique'); });",
      'dropIndex of a unique index',
    ],
    [
      'raw DROP CONSTRAINT',
      "await knex.raw('ALTER TABLE secrets DROP CONSTRAINT secrets_pkey');",
      'DROP CONSTRAINT',
    ],
    ['raw DROP INDEX', "await knex.raw('DROP INDEX rate_limits_key_unique');", 'DROP INDEX'],
    [
      'knex specificType NOT NULL in alterTable',
      "await knex.schema.alterTable('cas', (t) => { t.specificType('label', 'text not null'); });",
      'NOT NULL without a default on an existing table',
    ],
    [
      'knex notNullable() beside a defaultTo() of another column in one statement',
      "await knex.schema.alterTable('cas', (t) => { t.text('a').notNullable(), t.text('b').defaultTo('x'); });",
      'NOT NULL without a default on an existing table',
    ],
    [
      "knex notNullable() with defaultTo(knex.raw('NULL'))",
      "await knex.schema.alterTable('cas', (t) => { t.text('a').notNullable().defaultTo(knex.raw('NULL')); });",
      ['.defaultTo(null)', 'NOT NULL without a default on an existing table'],
    ],
    [
      'raw ADD COLUMN … NOT NULL DEFAULT NULL',
      "await knex.raw('ALTER TABLE cas ADD COLUMN label text NOT NULL DEFAULT NULL');",
      'NOT NULL without a default on an existing table',
    ],
    [
      'knex notNullable() in an alterTable callback passed by name',
      "await knex.schema.alterTable('cas', addLabel);\n}\nfunction addLabel(t: Knex.AlterTableBuilder): void {\n  t.text('label').notNullable();",
      'NOT NULL without a default on an existing table',
    ],
    [
      'an alterTable callback the check cannot read',
      "const change = (t: Knex.AlterTableBuilder) => t.text('label');\nawait knex.schema.alterTable('cas', change);",
      'alterTable callback not written in the call',
    ],
    [
      'raw ADD CONSTRAINT … CHECK NOT VALID',
      "await knex.raw('ALTER TABLE cas ADD CONSTRAINT cas_label_nn CHECK (label IS NOT NULL) NOT VALID');",
      'ADD CONSTRAINT',
    ],
    [
      'raw ADD UNIQUE',
      "await knex.raw('ALTER TABLE identities ADD UNIQUE (external_id)');",
      'ADD CONSTRAINT',
    ],
    [
      'raw UNIQUE on an existing column beside an added one',
      "await knex.raw('ALTER TABLE cas ADD COLUMN serial2 text, ADD CONSTRAINT c UNIQUE (serial2, name)');",
      'ADD CONSTRAINT',
    ],
    [
      'raw CREATE UNIQUE INDEX on an existing table',
      "await knex.raw('CREATE UNIQUE INDEX CONCURRENTLY ids_ext ON identities (external_id)');",
      'CREATE UNIQUE INDEX',
    ],
    [
      'knex unique() on an existing table',
      "await knex.schema.alterTable('identities', (t) => { t.unique(['external_id']); });",
      't.unique()',
    ],
    [
      'knex check() on an existing table',
      "await knex.schema.alterTable('cas', (t) => { t.check('length(name) < 10'); });",
      't.check()',
    ],
    ['raw TRUNCATE', "await knex.raw('TRUNCATE secrets');", 'TRUNCATE'],
    ['knex truncate', "await knex('secrets').truncate();", 'truncate'],
    ['raw DELETE FROM without WHERE', "await knex.raw('DELETE FROM secrets;');", 'DELETE without WHERE'],
    ['knex del() without where', "await knex('secrets').del();", 'DELETE without WHERE'],
    [
      'knex dropViewIfExists and dropSchema',
      "await knex.schema.dropViewIfExists('v');\nawait knex.schema.dropSchema('s');",
      ['dropView', 'dropSchema'],
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
    [
      'a plain index dropped with knex',
      "await knex.schema.alterTable('cas', (t) => { t.dropIndex(['name'], 'cas__name_index'); });",
    ],
    [
      'a unique constraint on a column added with it',
      "await knex.schema.alterTable('identities', (t) => {\n  t.text('external_ref').unique();\n  t.text('ref2');\n  t.unique(['ref2']);\n});",
    ],
    [
      'constraints on a table the migration creates',
      "await knex.schema.createTable('labels', (t) => { t.text('id'); t.unique(['id']); });\n" +
        "await knex.schema.alterTable('labels', (t) => { t.check('length(id) < 10'); t.text('x').notNullable(); });\n" +
        "await knex.raw('CREATE TABLE tags (id text); ALTER TABLE tags ADD CONSTRAINT tags_id CHECK (id <> \\'\\')');\n" +
        "await knex.raw('CREATE UNIQUE INDEX tags_id_unique ON tags (id)');",
    ],
    [
      'unique and foreign keys on columns the migration adds',
      "await knex.schema.alterTable('identities', (t) => { t.text('external_ref'); });\n" +
        "await knex('identities').update({ external_ref: knex.ref('external_id') });\n" +
        "await knex.schema.alterTable('identities', (t) => { t.unique(['external_ref']); });\n" +
        "await knex.raw('ALTER TABLE cas ADD COLUMN parent_id text, ADD COLUMN serial2 text');\n" +
        "await knex.raw('ALTER TABLE cas ADD CONSTRAINT cas_parent FOREIGN KEY (parent_id) REFERENCES cas (id)');\n" +
        "await knex.raw('CREATE UNIQUE INDEX cas_serial2 ON cas (serial2)');",
    ],
    [
      'a trigger on TRUNCATE',
      "await knex.raw('CREATE TRIGGER t AFTER INSERT OR TRUNCATE ON cas FOR EACH STATEMENT EXECUTE FUNCTION f()');",
    ],
    [
      'deletions with a WHERE, and a Map',
      "await knex('rate_limits').where('expires_at', '<', knex.fn.now()).del();\n" +
        "await knex.raw('DELETE FROM rate_limits WHERE expires_at < now()');\nnew Map([[1, 2]]).delete(1);",
    ],
    [
      'SQL words inside longer words and a quoted column named type',
      "await knex.raw('UPDATE cas SET \"type\" = ? WHERE truncated = false', ['x']);",
    ],
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

  test('a down that is no function (`export const down = irreversible`) leaves the code after it checked', () => {
    const source = `import type { Knex } from 'knex';
export async function up(knex: Knex): Promise<void> {
  await contract(knex);
}
export const down = irreversible;
async function contract(knex: Knex): Promise<void> {
  await knex.schema.alterTable('cas', (t) => t.dropColumn('name'));
}
async function irreversible(): Promise<void> {
  throw new Error('irreversible');
}
`;

    expect(refusedConstructs(source)).toEqual(['dropColumn']);
  });

  test('a down that up() calls is checked', () => {
    const source = migration('await down(knex);', "await knex.raw('TRUNCATE secrets');");

    expect(refusedConstructs(source)).toEqual(['TRUNCATE']);
  });

  test('a raise in a function that up() awaits as a statement of its body counts', () => {
    const source = `${migration('await contract(knex);\nawait raise(knex);')}
const raise = async (knex: Knex): Promise<void> => {
  await raiseCompatibilityLevel(knex, { level: '${NAME}', ${REASON}, raisedByVersion: '0.3.0' });
};
async function contract(knex: Knex): Promise<void> {
  await knex.schema.alterTable('login_failures', (t) => t.dropColumn('in_window'));
}
`;

    expect(checkMigration(NAME, source, CONTEXT)).toEqual([]);
  });

  const RAISE = `raiseCompatibilityLevel(knex, { level: '${NAME}', ${REASON}, raisedByVersion: '0.3.0' })`;
  const NOT_ALWAYS_RUN =
    'it is not a statement that up() always runs: write `await raiseCompatibilityLevel(…);` in the body of ' +
    'up() (or of a function that up() awaits that way), not in a branch, a callback, an unused function ' +
    'or after a return';
  const NOT_IMPORTED =
    "its raiseCompatibilityLevel is not the one imported from '../src/db/compatibility-level.js'";
  test.each([
    ['in a comment', `${DROP}\n// await ${RAISE};`, []],
    ['in a string', `${DROP}\nconst note = 'await ${RAISE.replace(/'/g, '"')};';\nvoid note;`, []],
    ['in a branch never taken', `${DROP}\nif (false) await ${RAISE};`, [NOT_ALWAYS_RUN]],
    ['after a return', `${DROP}\nif (process.env.NEVER_SET) return;\nawait ${RAISE};`, [NOT_ALWAYS_RUN]],
    [
      'in a callback',
      `${DROP}\nawait knex.transaction(async (knex) => {\n  await ${RAISE};\n});`,
      [NOT_ALWAYS_RUN],
    ],
    ['not awaited', `${DROP}\nvoid ${RAISE};`, [NOT_ALWAYS_RUN]],
    [
      'shadowed by a local function',
      `${DROP}\nconst raiseCompatibilityLevel = async (..._a: unknown[]) => false;\nawait ${RAISE};`,
      [NOT_IMPORTED],
    ],
  ])('a raise %s does not count', (_, up, problems) => {
    const found = findInMigration(NAME, migration(up), CONTEXT);

    expect(found.raiseProblems).toEqual(problems);
    expect(found.constructs.map((c) => c.name)).toEqual(['dropColumn']);
  });

  test('a raise in a function named up that is not the exported up does not count', () => {
    const source = `import type { Knex } from 'knex';
import { raiseCompatibilityLevel } from '../src/db/compatibility-level.js';
async function up(knex: Knex): Promise<void> {
  await ${RAISE};
}
async function contract(knex: Knex): Promise<void> {
  await knex.schema.dropTable('login_shadow');
}
export { contract as up };
`;

    expect(findInMigration(NAME, source, CONTEXT)).toEqual({
      constructs: [{ name: 'dropTable', breaks: 'drops a table they use' }],
      raiseProblems: [NOT_ALWAYS_RUN],
    });
  });

  test('a raise in a function that up() never calls does not count', () => {
    const source = `${migration(DROP)}\nasync function never(knex: Knex): Promise<void> {\n  await ${RAISE};\n}\n`;

    expect(findInMigration(NAME, source, CONTEXT).raiseProblems).toEqual([NOT_ALWAYS_RUN]);
  });

  test('a helper shadowed inside up() is not followed to its raise', () => {
    const source = `${migration(`${DROP}\nconst raise = async (_k: Knex) => undefined;\nawait raise(knex);`)}
async function raise(knex: Knex): Promise<void> {
  await ${RAISE};
}
`;

    expect(findInMigration(NAME, source, CONTEXT).raiseProblems).toEqual([NOT_ALWAYS_RUN]);
  });

  test.each([
    [
      'without an import',
      (source: string) => source.replace(/^import \{ raiseCompatibilityLevel \}.*$/m, ''),
    ],
    [
      'imported from elsewhere',
      (source: string) => source.replace("'../src/db/compatibility-level.js'", "'./fake-level.js'"),
    ],
  ])('a raise of a function %s does not count', (_, edit) => {
    const found = findInMigration(NAME, edit(migration(`${DROP}\nawait ${RAISE};`)), CONTEXT);

    expect(found.raiseProblems).toEqual([NOT_IMPORTED]);
    expect(found.constructs.map((c) => c.name)).toEqual(['dropColumn']);
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
