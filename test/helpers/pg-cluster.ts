import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './spawn-controller.js';
import { BINARIES, describeNeeding } from './system-binaries.js';
import { describeWithPostgres, usingPostgres } from './test-database.js';

const run = promisify(execFile);
const BIN = dirname(BINARIES.initdb.path);

/**
 * A suite that runs clusters of its own: PostgreSQL only (as describeWithPostgres), and the
 * server programs must be on this machine, not only reachable over TCP.
 */
export const describeWithOwnCluster = usingPostgres
  ? describeNeeding([BINARIES.initdb], describeWithPostgres)
  : describeWithPostgres;

/**
 * A throw-away PostgreSQL cluster for tests that stop, restart or slow down their database: its own
 * data directory and socket directory under a temp dir, its own port, removed by `destroy`. Never
 * the PostgreSQL the other suites share. initdb and postgres refuse to run as root, so as root
 * they run as the `postgres` user, which then owns the temp dir.
 */
export interface PgCluster {
  port: number;
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  /** `pg_ctl stop -m <mode>`: fast ends sessions cleanly, immediate is a crash (recovery at start). */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  /** A new connection to the cluster (the caller ends it). */
  connect(): Promise<pg.Client>;
  destroy(): Promise<void>;
}

async function asOwner(args: string[], owner: { uid: number; gid: number } | undefined): Promise<string> {
  const [cmd, ...rest] = args;
  const { stdout } = owner
    ? await run('runuser', ['-u', 'postgres', '--', cmd!, ...rest], { timeout: 120_000 })
    : await run(cmd!, rest, { timeout: 120_000 });
  return stdout;
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const { stdout: uid } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
}

export async function startPgCluster(settings: Record<string, string> = {}): Promise<PgCluster> {
  const owner = process.getuid?.() === 0 ? await postgresIds() : undefined;
  const dir = mkdtempSync(join(tmpdir(), 'svc-pgcluster-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  chmodSync(dir, 0o700);
  const data = join(dir, 'data');
  const port = await freePort();
  await asOwner(
    [join(BIN, 'initdb'), '-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8'],
    owner,
  );
  // The fault tests stop processes, not the machine: fsync buys nothing here and costs seconds.
  const conf = {
    port: String(port),
    listen_addresses: "'127.0.0.1'",
    unix_socket_directories: `'${dir}'`,
    fsync: 'off',
    max_connections: '200',
    ...settings,
  };
  const confPath = join(data, 'postgresql.auto.conf');
  writeFileSync(
    confPath,
    Object.entries(conf)
      .map(([k, v]) => `${k} = ${v}\n`)
      .join(''),
  );
  if (owner) chownSync(confPath, owner.uid, owner.gid);
  const pgCtl = (...args: string[]) =>
    asOwner([join(BIN, 'pg_ctl'), '-D', data, '-l', join(dir, 'log'), '-w', '-t', '60', ...args], owner);

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  await pgCtl('start');
  let destroyed = false;
  return {
    port,
    url,
    stop: async (mode) => {
      await pgCtl('stop', '-m', mode);
    },
    start: async () => {
      await pgCtl('start');
    },
    connect: async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      return client;
    },
    destroy: async () => {
      if (destroyed) return;
      destroyed = true;
      await pgCtl('stop', '-m', 'immediate').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
