import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pgliteDir } from '../../src/db/create-database.js';
import { copyMigratedPglite } from './pglite-template.js';
import { createTestDatabaseUrl } from './test-database.js';

export interface SpawnedController {
  child: ChildProcess;
  port: number;
  url: string;
  output: () => string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  ca: () => string;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/**
 * A config file in `dir` for one of two processes that both serve both addresses, as the
 * instances of one deployment behind one name do: `own` is bound, `other` is also answered for.
 */
export function twoAddressConfig(dir: string, own: number, other: number): string {
  const file = join(dir, 'svc.yaml');
  writeFileSync(
    file,
    `edge: {}
web:
  - name: main
    bindPoints:
      - { interface: 127.0.0.1:${own}, address: 127.0.0.1:${own} }
      - { interface: 127.0.0.1:${own}, address: 127.0.0.1:${other} }
    apis: [ { binding: edge-client }, { binding: edge-management } ]
`,
  );
  return file;
}

/**
 * Runs `src/main.ts` as its own process, as `npm start` would (through tsx, on the current source,
 * or on the checkout at `root`: another release, with its own tsx and dependencies).
 */
export async function spawnController(
  env: Record<string, string>,
  port?: number,
  /** Default variables to leave out, e.g. SVC_ADMIN_PASSWORD to have one generated. */
  unset: string[] = [],
  /** Node options before the entry, e.g. the heap limits of src/node-heap-options.ts. */
  nodeArgs: string[] = [],
  root: string = process.cwd(),
): Promise<SpawnedController> {
  const p = port ?? (await freePort());
  let out = '';
  const fullEnv: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    SVC_ADDRESS: `127.0.0.1:${p}`,
    LOG_LEVEL: 'info',
    SVC_MASTER_KEY: 'c3ZjLXRlc3QtbWFzdGVyLWtleS0zMi1ieXRlcy0hISE=',
    SVC_ADMIN_PASSWORD: 'admin-password-1',
    ...env,
  };
  for (const name of unset) delete fullEnv[name];
  // An embedded database starts as a copy of the migrated template, as startTestServer's do:
  // initdb and every migration inside WASM would cost each process seconds of CPU.
  const dataDir = fullEnv.SVC_DATA_DIR;
  if (dataDir && !fullEnv.DATABASE_URL && !existsSync(pgliteDir(dataDir)))
    await copyMigratedPglite(pgliteDir(dataDir));
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', join(root, 'src', 'main.ts')], {
    cwd: root,
    env: fullEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    port: p,
    url: `https://127.0.0.1:${p}`,
    output: () => out,
    exited,
    ca: () => readFileSync(join(env.SVC_DATA_DIR!, 'pki', 'ca.pem'), 'utf8'),
  };
}

/** Waits until the process logs that it listens, or exits. */
export async function waitListening(c: SpawnedController, timeoutMs = 120_000): Promise<void> {
  const start = Date.now();
  while (!c.output().includes('controller listening')) {
    if (c.child.exitCode !== null) throw new Error(`controller exited ${c.child.exitCode}: ${c.output()}`);
    if (Date.now() - start > timeoutMs) throw new Error(`controller did not start: ${c.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Two controller processes on one fresh PostgreSQL database (see `startControllerPair`). */
export interface ControllerPair {
  a: SpawnedController;
  b: SpawnedController;
  /** Their database. */
  dbUrl: string;
  /** Stops both processes, then drops their database. */
  close: () => Promise<void>;
}

/**
 * Two controllers on a database of their own, as the replicas of one deployment behind one name:
 * each binds its own port and also answers for the other's address (`twoAddressConfig`). Rate
 * limits are off. Needs TEST_DATABASE_URL (`describeWithPostgres`).
 */
export async function startControllerPair(prefix = 'svc'): Promise<ControllerPair> {
  const db = await createTestDatabaseUrl();
  if (!db) throw new Error('two controller processes need PostgreSQL: set TEST_DATABASE_URL');
  const [portA, portB] = [await freePort(), await freePort()];
  const env = (side: string, own: number, other: number) => {
    const dir = mkdtempSync(join(tmpdir(), `${prefix}-${side}-`));
    return {
      SVC_DATA_DIR: dir,
      DATABASE_URL: db.url,
      SVC_CONFIG: twoAddressConfig(dir, own, other),
      SVC_RATE_LIMITS_ENABLED: 'false',
    };
  };
  const started: SpawnedController[] = [];
  const stop = async () => {
    for (const c of started) c.child.kill('SIGTERM');
    await Promise.all(started.map((c) => c.exited));
    await db.drop();
  };
  try {
    for (const [side, own, other] of [
      ['a', portA, portB],
      ['b', portB, portA],
    ] as const) {
      const c = await spawnController(env(side, own, other), own);
      started.push(c);
      await waitListening(c);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const [a, b] = started as [SpawnedController, SpawnedController];
  return { a, b, dbUrl: db.url, close: stop };
}
