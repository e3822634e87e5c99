import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { ConfigError, loadConfig, type Config } from './config/load-config.js';
import { resolveMasterKey } from './crypto/master-key.js';
import { createSecretBox } from './crypto/secret-box.js';
import { databaseFor, pgliteDir } from './db/create-database.js';
import { lockDataDir } from './db/data-dir-lock.js';
import { migrateToLatest } from './db/migrate.js';
import { tightenTree } from './db/private-data-dir.js';
import { afterRestore, afterRestoreLine } from './services/after-restore.js';
import { createAuditTrail } from './services/audit-trail.js';
import { verifyMasterKey } from './services/master-key-check.js';

/**
 * The master key the restored secrets were sealed with. Never generated here: a new key would
 * open nothing, and would be left behind in the data directory.
 */
function masterKeyOf(config: Config): Buffer {
  if (!config.masterKey && !existsSync(join(config.dataDir, 'master.key'))) {
    throw new Error(`no master key: set SVC_MASTER_KEY, or put the backup's master.key in ${config.dataDir}`);
  }
  return resolveMasterKey(config.masterKey, config.dataDir).key;
}

/** The restore step on the configured database; answers its summary line. */
async function endEverythingBeforeRestore(config: Config): Promise<string> {
  const key = masterKeyOf(config);
  if (!config.databaseUrl && !existsSync(pgliteDir(config.dataDir))) {
    throw new Error(`no embedded database in ${config.dataDir}: restore the data directory first`);
  }
  const unlock = config.databaseUrl ? () => undefined : lockDataDir(config.dataDir);
  const database = databaseFor(config);
  try {
    // Before anything changes, migrations included: a wrong key must leave the restore as it was.
    const box = createSecretBox(key);
    await verifyMasterKey(database.knex, box);
    // As a start would: the restored schema may be older than this version.
    await migrateToLatest(database);
    // The audit event's log line goes to stderr: stdout carries the summary line alone.
    const logger = pino({ level: config.logLevel, base: { service: 'svc-controller' } }, pino.destination(2));
    const summary = await afterRestore({ knex: database.knex, box, audit: createAuditTrail(logger) });
    return afterRestoreLine(summary);
  } finally {
    await database.knex.destroy();
    if (database.kind === 'pglite') tightenTree(config.dataDir);
    unlock();
  }
}

/**
 * `svc controller after-restore` and `npm run db:after-restore`: configured like the controller
 * (SVC_* variables, `.env`, SVC_CONFIG); one line on stdout when done, one line on stderr and
 * exit code 1 when refused (2 for a bad configuration).
 */
export async function runAfterRestore(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  try {
    process.stdout.write(`${await endEverythingBeforeRestore(config)}\n`);
  } catch (err) {
    process.stderr.write(`svc after-restore refused: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
