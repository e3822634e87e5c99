import pg from 'pg';
import { createDatabase, type Database } from './create-database.js';

/** Any constant shared by every instance; "svc\0mig" as a 64-bit integer. */
const MIGRATION_LOCK_KEY = '8319395793566789479';

/**
 * Applies pending migrations. On PostgreSQL the run is serialized by an advisory lock held on a
 * connection of its own, so instances starting together do not race; PGlite has one connection
 * and one process (the data-dir lock file), so it needs none.
 */
export async function migrateToLatest(db: Database): Promise<string[]> {
  if (db.target.kind === 'pglite') return (await db.knex.migrate.latest())[1] as string[];
  const client = new pg.Client({ connectionString: db.target.connectionString });
  await client.connect();
  // A migration may rewrite a large table: the statement timeout of requests does not apply.
  const migrator = createDatabase({ ...db.target, statementTimeoutMs: 0 });
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    return (await migrator.knex.migrate.latest())[1] as string[];
  } finally {
    await migrator.knex.destroy().catch(() => undefined);
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}
