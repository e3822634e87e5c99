import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { createDatabase, pgliteDir, type Database } from '../../src/db/create-database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { copyMigratedPglite } from './pglite-template.js';
import { createTestDatabaseUrl } from './test-database.js';

/** This code's release, as package.json says. */
export const PACKAGE_VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string })
  .version;

/** A database migrated by the current code, which tests change as a newer release would. */
export interface MigratedDatabase {
  dataDir: string;
  databaseUrl?: string;
  /** The variables a controller process (or a script) needs to use it. */
  env: Record<string, string>;
  /** Runs `work` on a connection of its own, closed after (PGlite allows one process at a time). */
  use<T>(work: (knex: Knex) => Promise<T>): Promise<T>;
  drop(): Promise<void>;
}

/** PGlite in a data directory of its own, or a fresh PostgreSQL database with TEST_DATABASE_URL. */
export async function migratedDatabase(): Promise<MigratedDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-upgrade-'));
  const pg = await createTestDatabaseUrl();
  const open = (): Database =>
    pg
      ? createDatabase({ kind: 'pg', connectionString: pg.url, poolMax: 2 })
      : createDatabase({ kind: 'pglite', dataDir: pgliteDir(dataDir) });
  if (!pg) await copyMigratedPglite(pgliteDir(dataDir));
  const use = async <T>(work: (knex: Knex) => Promise<T>): Promise<T> => {
    const database = open();
    try {
      return await work(database.knex);
    } finally {
      await database.knex.destroy();
    }
  };
  if (pg) {
    const database = open();
    try {
      await migrateToLatest(database);
    } finally {
      await database.knex.destroy();
    }
  }
  return {
    dataDir,
    databaseUrl: pg?.url,
    env: { SVC_DATA_DIR: dataDir, ...(pg ? { DATABASE_URL: pg.url } : {}) },
    use,
    drop: async () => pg?.drop(),
  };
}

/** The row a newer release's migration leaves in knex's list of completed migrations. */
export async function recordNewerMigration(knex: Knex, name: string): Promise<void> {
  const { batch } = (await knex('knex_migrations').max('batch as batch').first()) as { batch: number };
  await knex('knex_migrations').insert({ name, batch: batch + 1, migration_time: new Date() });
}
