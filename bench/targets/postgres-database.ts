import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createCpuAccumulator } from '../proc-cpu.js';
import { startStatementCounter } from './pg-statement-counter.js';

/** The server the bench creates its databases on; SVC_BENCH_POSTGRES_URL points it at another. */
export const POSTGRES_URL =
  process.env.SVC_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface BenchDatabase {
  /** For the target (the service or baseline (c)): through a relay that counts its statements. */
  url: string;
  /**
   * Statements the target has sent so far for requests (the service's timers' statements left out),
   * and the BEGIN/COMMIT/ROLLBACK among them.
   */
  statements(): { all: number; transactionControl: number };
  /** CPU used so far by this database's backend processes (the server runs on this machine). */
  backendsCpuMs(): Promise<number>;
  /**
   * `VACUUM (ANALYZE)` of the whole database, so that one scenario's dead rows are not cleaned up
   * (by autovacuum, on the bench's CPU count) during the next one.
   */
  vacuum(): Promise<void>;
  drop(): Promise<void>;
}

/**
 * A fresh database for one run (`<prefix>_<random>`: the service's, or baseline (c)'s) on the local PostgreSQL, dropped at the end. Only the backends
 * serving it are counted: the shared background processes (WAL writer, checkpointer) also work
 * for whatever else runs on this server and are left out.
 */
export async function createBenchDatabase(prefix = 'svc_bench'): Promise<BenchDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const direct = new URL(POSTGRES_URL);
  const counter = await startStatementCounter({ host: direct.hostname, port: Number(direct.port || 5432) });
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  url.host = `127.0.0.1:${counter.port}`;
  const total = createCpuAccumulator();
  return {
    url: url.toString(),
    statements: () => ({
      all: counter.count() - counter.background(),
      transactionControl: counter.transactionControl(),
    }),
    async backendsCpuMs() {
      const { rows } = await admin.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = $1',
        [name],
      );
      return total(rows.map((r) => r.pid));
    },
    async vacuum() {
      const own = new URL(POSTGRES_URL);
      own.pathname = `/${name}`;
      const c = new pg.Client({ connectionString: own.toString() });
      await c.connect();
      await c.query('VACUUM (ANALYZE)').finally(() => c.end());
    },
    async drop() {
      await counter.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
