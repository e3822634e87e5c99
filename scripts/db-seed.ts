import { loadConfig } from '../src/config/load-config.js';
import { databaseFor } from '../src/db/create-database.js';
import { lockDataDir } from '../src/db/data-dir-lock.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { seed } from '../seeds/demo.js';

/** `npm run db:seed`: demo data for local trials; refused in production unless --force. */
if (process.env.NODE_ENV === 'production' && !process.argv.includes('--force')) {
  process.stderr.write('db:seed: refusing to add demo identities with NODE_ENV=production (pass --force)\n');
  process.exit(1);
}
const config = loadConfig();
const unlock = config.databaseUrl ? () => undefined : lockDataDir(config.dataDir);
const database = databaseFor(config);
try {
  await migrateToLatest(database);
  const made = await seed(database.knex);
  process.stdout.write(made.length ? `seeded: ${made.join('; ')}\n` : 'demo data already present\n');
} finally {
  await database.knex.destroy();
  unlock();
}
