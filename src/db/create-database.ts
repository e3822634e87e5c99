import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import knexFactory, { type Knex } from 'knex';
import ClientPgLite from 'knex-pglite';
import { migrationSource } from './migration-source.js';

/** A knex handle or a transaction: every repository function takes one of these. */
export type Db = Knex | Knex.Transaction;

export type DatabaseTarget =
  | {
      kind: 'pg';
      connectionString: string;
      poolMax: number;
      /** How "one instance at a time" is held (src/db/instance-lock.ts); default `advisory`. */
      instanceLock?: 'advisory' | 'lease';
    }
  | { kind: 'pglite'; dataDir?: string };

export interface Database {
  knex: Knex;
  kind: DatabaseTarget['kind'];
  target: DatabaseTarget;
}

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
      migrations: { migrationSource },
      useNullAsDefault: true,
    });
    return { knex, kind: 'pglite', target };
  }
  const knex = knexFactory({
    client: 'pg',
    connection: target.connectionString,
    pool: { min: 0, max: target.poolMax },
    migrations: { migrationSource },
  });
  return { knex, kind: 'pg', target };
}

export function pgliteDir(dataDir: string): string {
  return join(dataDir, 'db');
}

/** PostgreSQL when `DATABASE_URL` is set, else the embedded database in the data directory. */
export function databaseFor(config: {
  databaseUrl?: string;
  dataDir: string;
  database: { poolMax: number; instanceLock?: 'advisory' | 'lease' };
}): Database {
  return config.databaseUrl
    ? createDatabase({
        kind: 'pg',
        connectionString: config.databaseUrl,
        poolMax: config.database.poolMax,
        instanceLock: config.database.instanceLock,
      })
    : createDatabase({ kind: 'pglite', dataDir: pgliteDir(config.dataDir) });
}
