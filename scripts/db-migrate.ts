import { loadConfigOrExit } from '../src/config/load-config-or-exit.js';
import { databaseFor, type Database } from '../src/db/create-database.js';
import { lockDataDir } from '../src/db/data-dir-lock.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { tightenTree } from '../src/db/private-data-dir.js';

/**
 * `npm run db:migrate`: applies pending migrations (the service also does it at start). Refused as
 * the service refuses to start (a database in use, unreachable, or at a compatibility level above
 * this code): one line on stderr, exit code 1, no stack.
 */
const config = loadConfigOrExit();
let unlock = () => undefined as void;
let database: Database | undefined;
try {
  if (!config.databaseUrl) unlock = lockDataDir(config.dataDir);
  database = databaseFor(config);
  const applied = await migrateToLatest(database);
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'already up to date\n');
} catch (err) {
  process.stderr.write(`db:migrate: ${(err as Error).message}\n`);
  process.exitCode = 1;
} finally {
  await database?.knex.destroy();
  // PGlite creates some of its files readable by all: private again, as after a controller's run.
  if (database?.kind === 'pglite') tightenTree(config.dataDir);
  unlock();
}
