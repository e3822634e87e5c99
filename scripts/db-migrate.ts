import { loadConfig } from '../src/config/load-config.js';
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
} finally {
  await database.knex.destroy();
  unlock();
}
