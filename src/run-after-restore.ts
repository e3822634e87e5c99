import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { pino } from 'pino';
import { loadConfigOrExit } from './config/load-config-or-exit.js';
import type { Config } from './config/load-config.js';
import { resolveMasterKey } from './crypto/master-key.js';
import { createSecretBox } from './crypto/secret-box.js';
import { databaseFor, pgliteDir } from './db/create-database.js';
import { lockDataDir } from './db/data-dir-lock.js';
import { migrateToLatest } from './db/migrate.js';
import { controllerConnections } from './db/running-controllers.js';
import { tightenTree } from './db/private-data-dir.js';
import { createLogger } from './logger.js';
import { afterRestore, afterRestoreLine } from './services/after-restore.js';
import { createAuditTrail } from './services/audit-trail.js';
import { verifyRestoredMasterKey } from './services/master-key-check.js';

/**
 * The master key the restored secrets were sealed with. Never generated here: a new key would
 * open nothing, and would be left behind in the data directory.
 */
function restoredMasterKey(config: Config): Buffer {
  if (!config.masterKey && !existsSync(join(config.dataDir, 'master.key'))) {
    throw new Error(`no master key: set SVC_MASTER_KEY, or put the backup's master.key in ${config.dataDir}`);
  }
  return resolveMasterKey(config.masterKey, config.dataDir).key;
}

/** The step's own connections, told apart from a controller's in pg_stat_activity. */
const RESTORE_STEP_NAME = 'svc-after-restore';

async function refuseWhileControllersRun(knex: Knex): Promise<void> {
  const connections = await controllerConnections(knex);
  if (connections > 0) {
    throw new Error(
      `controllers are still connected to this database (${connections} connections): stop every instance, then run this step`,
    );
  }
}

/** The restore step on the configured database; answers its summary line. */
async function runRestoreStep(config: Config): Promise<string> {
  const key = restoredMasterKey(config);
  if (!config.databaseUrl && !existsSync(pgliteDir(config.dataDir))) {
    throw new Error(`no embedded database in ${config.dataDir}: restore the data directory first`);
  }
  const unlock = config.databaseUrl ? () => undefined : lockDataDir(config.dataDir);
  const database = databaseFor(config, RESTORE_STEP_NAME);
  try {
    // A controller still running would keep serving what this step ends (its cached sessions, its
    // revocation feed's position from before the restore): every one must be stopped first. The
    // embedded database's lock above says the same for it.
    if (database.kind === 'pg') await refuseWhileControllersRun(database.knex);
    // Before anything changes, migrations included: a wrong key must leave the restore as it was.
    const box = createSecretBox(key);
    await verifyRestoredMasterKey(database.knex, box);
    // As a start would: the restored schema may be older than this version.
    await migrateToLatest(database);
    // The audit event's log line goes to stderr: stdout carries the summary line alone.
    const logger = createLogger(config.logLevel, pino.destination(2));
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
  const config = loadConfigOrExit();
  try {
    process.stdout.write(`${await runRestoreStep(config)}\n`);
  } catch (err) {
    process.stderr.write(`svc controller after-restore refused: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
