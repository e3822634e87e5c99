import { afterAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase } from '../../src/db/create-database.js';
import { copyMigratedPglite } from '../helpers/pglite-template.js';
import { createTestDatabaseUrl, usingPostgres } from '../helpers/test-database.js';
import { startTestServer } from '../helpers/test-server.js';
import { afterRestoreScript, MASTER_KEY, OTHER_KEY, WRONG_KEY_LINE } from './backup-fixtures.js';

const DB = usingPostgres ? 'PostgreSQL' : 'PGlite';

/** The newest migration, undone as a database of the release before it would be. */
async function undoNewestMigration(target: { databaseUrl?: string; dataDir: string }) {
  const db = target.databaseUrl
    ? createDatabase({ kind: 'pg', connectionString: target.databaseUrl, poolMax: 1 })
    : createDatabase({ kind: 'pglite', dataDir: join(target.dataDir, 'db') });
  try {
    await db.knex('knex_migrations').where({ name: '025_compatibility_level' }).delete();
    await db.knex.schema.dropTable('schema_compatibility');
  } finally {
    await db.knex.destroy();
  }
}

async function schemaOf(target: { databaseUrl?: string; dataDir: string }) {
  const db = target.databaseUrl
    ? createDatabase({ kind: 'pg', connectionString: target.databaseUrl, poolMax: 1 })
    : createDatabase({ kind: 'pglite', dataDir: join(target.dataDir, 'db') });
  try {
    return {
      levelTable: await db.knex.schema.hasTable('schema_compatibility'),
      migrations: Number((await db.knex('knex_migrations').count<{ n: string }[]>({ n: '*' }))[0]!.n),
    };
  } finally {
    await db.knex.destroy();
  }
}

describe(`the master key is checked before anything is written (${DB})`, () => {
  const dirs: string[] = [];
  const drops: (() => Promise<void>)[] = [];
  const newDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-key-first-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(async () => {
    for (const drop of drops) await drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('a start with the wrong key on a database with a pending migration refuses and leaves it unmigrated', async () => {
    const db = await createTestDatabaseUrl();
    if (db) drops.push(db.drop);
    const target = { databaseUrl: db?.url, dataDir: newDir() };
    const first = await startTestServer(target);
    await first.app.close();
    await undoNewestMigration(target);
    const before = await schemaOf(target);
    expect(before.levelTable).toBe(false);

    await expect(startTestServer({ ...target, env: { SVC_MASTER_KEY: OTHER_KEY } })).rejects.toThrow(
      WRONG_KEY_LINE,
    );
    expect(await schemaOf(target)).toEqual(before);

    // With its own key the same database migrates and starts.
    const again = await startTestServer(target);
    await again.app.close();
    expect((await schemaOf(target)).levelTable).toBe(true);
  }, 180_000);

  test('the restore step refuses a database that holds no record of a master key, and writes nothing', async () => {
    const dataDir = newDir();
    // Migrated, but never opened by a controller: what a wrong data directory or URL would show.
    await copyMigratedPglite(join(dataDir, 'db'));
    const step = await afterRestoreScript({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: MASTER_KEY });
    expect(step.code).toBe(1);
    expect(step.stderr).toBe(
      'svc controller after-restore refused: this database holds no record of a master key: it is not a restored controller database (check DATABASE_URL or the data directory)\n',
    );
    const db = createDatabase({ kind: 'pglite', dataDir: join(dataDir, 'db') });
    try {
      for (const table of ['secrets', 'signing_keys']) {
        const [row] = await db.knex(table).count<{ n: string }[]>({ n: '*' });
        expect(`${table}: ${Number(row!.n)}`).toBe(`${table}: 0`);
      }
    } finally {
      await db.knex.destroy();
    }
  }, 180_000);
});
