import { loadConfig } from './src/config/load-config.js';
import { databaseFor } from './src/db/create-database.js';

/**
 * For the knex CLI through tsx (`npx tsx node_modules/knex/bin/cli.js --knexfile knexfile.ts …`):
 * the same connection and in-code migration source as the service.
 */
const config = loadConfig();
const database = databaseFor(config);

export default database.knex.client.config;
