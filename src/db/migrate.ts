import { createDatabase, type Database } from './create-database.js';
import { instanceLockFor } from './instance-lock-for.js';
import { withInstanceLock } from './instance-lock.js';

/**
 * Applies pending migrations, one instance at a time (src/db/instance-lock-for.ts: an advisory lock
 * on a connection of its own, or a lease row), so instances starting together do not race; PGlite
 * has one connection and one process (the data-dir lock file), so it needs none.
 */
export async function migrateToLatest(db: Database): Promise<string[]> {
  if (db.target.kind === 'pglite') return (await db.knex.migrate.latest())[1] as string[];
  // A migration may rewrite a large table: the statement timeout of requests does not apply.
  const migrator = createDatabase({ ...db.target, statementTimeoutMs: 0 });
  try {
    return await withInstanceLock(
      instanceLockFor(db, 'migrations'),
      async () => (await migrator.knex.migrate.latest())[1] as string[],
    );
  } finally {
    await migrator.knex.destroy().catch(() => undefined);
  }
}
