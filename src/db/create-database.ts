import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import knexFactory, { type Knex } from 'knex';
import ClientPgLite from 'knex-pglite';
import { migrationSource } from './migration-source.js';
import { PooledPgClient } from './fixed-statement.js';

/** A knex handle or a transaction: every repository function takes one of these. */
export type Db = Knex | Knex.Transaction;

export interface PgTarget {
  kind: 'pg';
  connectionString: string;
  poolMax: number;
  /** Server-side limit per statement, in ms; 0 = none. */
  statementTimeoutMs?: number;
  /** How long a query waits for a pooled connection (or a new one to connect), in ms. */
  acquireTimeoutMs?: number;
  /** How "one instance at a time" is held (src/db/instance-lock.ts); default `advisory`. */
  instanceLock?: 'advisory' | 'lease';
  /** pg_stat_activity's name for these connections; default APPLICATION_NAME. */
  applicationName?: string;
}

export type DatabaseTarget = PgTarget | { kind: 'pglite'; dataDir?: string };

/** How long a connection may sit idle inside an open transaction before PostgreSQL ends it. */
const IDLE_IN_TRANSACTION_MS = 60_000;

/** The name the controller's connections carry in pg_stat_activity. */
export const APPLICATION_NAME = 'svc-controller';

export interface Database {
  knex: Knex;
  kind: DatabaseTarget['kind'];
  target: DatabaseTarget;
}

/**
 * The migrations listed in code. A database may also record later migrations this code does not
 * know, left by a newer release sharing it during a rolling upgrade: knex then leaves them alone
 * instead of refusing ("the migration directory is corrupt"), and the compatibility level decides
 * whether this code may run there (src/db/check-compatibility-level.ts).
 */
const migrationsConfig: Knex.MigratorConfig = { migrationSource, disableMigrationsListValidation: true };

export function createDatabase(target: DatabaseTarget): Database {
  if (target.kind === 'pglite') {
    // PGlite creates only the last directory level itself (no `recursive`): make the whole path.
    if (target.dataDir) mkdirSync(target.dataDir, { recursive: true, mode: 0o700 });
    const knex = knexFactory({
      client: ClientPgLite,
      dialect: 'postgres',
      // pg_trgm backs the trigram index of `contains` filters (migrations/009_identity_list_indexes.ts).
      connection: {
        pglite: new PGlite({ dataDir: target.dataDir, extensions: { pg_trgm } }),
      } as Knex.PgConnectionConfig,
      migrations: migrationsConfig,
      useNullAsDefault: true,
      compileSqlOnError: false,
    });
    return { knex, kind: 'pglite', target };
  }
  const acquireTimeoutMillis = target.acquireTimeoutMs ?? 60_000;
  const knex = knexFactory({
    client: PooledPgClient,
    connection: {
      connectionString: target.connectionString,
      application_name: target.applicationName ?? APPLICATION_NAME,
      // A statement stuck behind a lock or a slow disk fails after this long instead of holding
      // its connection (and the requests queued behind it) indefinitely.
      ...(target.statementTimeoutMs ? { statement_timeout: target.statementTimeoutMs } : {}),
      // A transaction left open by a lost promise would hold its row locks and its connection
      // forever; PostgreSQL ends such a session instead (no transaction of ours waits this long).
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
      // A database that accepts TCP but never answers must not hold a request for longer either.
      connectionTimeoutMillis: acquireTimeoutMillis,
      // A peer that vanished without a FIN (a failed-over host) is noticed by the kernel.
      keepAlive: true,
    },
    // Requests wait at most this long for a connection; then they fail (503) instead of piling up.
    pool: { min: 0, max: target.poolMax, acquireTimeoutMillis, createTimeoutMillis: acquireTimeoutMillis },
    acquireConnectionTimeout: acquireTimeoutMillis,
    migrations: migrationsConfig,
    // A failed statement's error names its text, not its values (usernames, hashed ids, payloads).
    compileSqlOnError: false,
  });
  return { knex, kind: 'pg', target };
}

export function pgliteDir(dataDir: string): string {
  return join(dataDir, 'db');
}

/** PostgreSQL when `DATABASE_URL` is set, else the embedded database in the data directory. */
export function databaseFor(
  config: {
    databaseUrl?: string;
    dataDir: string;
    database: {
      poolMax: number;
      statementTimeout?: number;
      acquireTimeout?: number;
      instanceLock?: 'advisory' | 'lease';
    };
  },
  applicationName?: string,
): Database {
  const { poolMax, statementTimeout = 0, acquireTimeout = 10 } = config.database;
  return config.databaseUrl
    ? createDatabase({
        kind: 'pg',
        connectionString: config.databaseUrl,
        poolMax,
        statementTimeoutMs: statementTimeout * 1000,
        acquireTimeoutMs: Math.max(1, acquireTimeout) * 1000,
        instanceLock: config.database.instanceLock,
        applicationName,
      })
    : createDatabase({ kind: 'pglite', dataDir: pgliteDir(config.dataDir) });
}
