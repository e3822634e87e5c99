import { loadConfig } from '../src/config/load-config.js';
import { CompatibilityLevelError } from '../src/db/check-compatibility-level.js';
import { databaseFor } from '../src/db/create-database.js';
import { lockDataDir } from '../src/db/data-dir-lock.js';
import { migrateToLatest } from '../src/db/migrate.js';

/** `npm run db:migrate`: applies pending migrations (the service also does it at start). */
const config = loadConfig();
const unlock = config.databaseUrl ? () => undefined : lockDataDir(config.dataDir);
const database = databaseFor(config);
try {
  const applied = await migrateToLatest(database);
  process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'already up to date\n');
} catch (err) {
  // Refused as the service refuses to start: one line, no stack.
  if (!(err instanceof CompatibilityLevelError)) throw err;
  process.stderr.write(`db:migrate: ${err.message}\n`);
  process.exitCode = 1;
} finally {
  await database.knex.destroy();
  unlock();
}
