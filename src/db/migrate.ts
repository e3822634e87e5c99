import { checkCompatibilityLevel } from './check-compatibility-level.js';
import { createDatabase, type Database } from './create-database.js';
import { instanceLockFor } from './instance-lock-for.js';
import { withInstanceLock } from './instance-lock.js';

/**
 * Applies pending migrations, one instance at a time (src/db/instance-lock-for.ts: an advisory lock
 * on a connection of its own, or a lease row), so instances starting together do not race; PGlite
 * has one connection and one process (the data-dir lock file), so it needs none.
 *
 * Refuses (CompatibilityLevelError) when the database's compatibility level is above this code's
 * newest migration: checked before migrating, so that such code changes nothing, and again after,
 * since a newer instance may have migrated meanwhile (while this one waited for the lock). Later
 * migrations this code does not know are left alone (src/db/create-database.ts).
 */
export async function migrateToLatest(db: Database): Promise<string[]> {
  await checkCompatibilityLevel(db.knex);
  const applied = await applyPending(db);
  await checkCompatibilityLevel(db.knex);
  return applied;
}

async function applyPending(db: Database): Promise<string[]> {
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
