import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBenchClient, type BenchClient } from '../load/http-client.js';
import { processCpuMs, processMemoryMb } from '../proc-cpu.js';
import { freePort } from './free-port.js';
import { spawnNodeChild } from './child-process.js';
import { CONTROLLER_NODE_OPTIONS } from '../../src/node-heap-options.js';
import { createBenchDatabase, type BenchDatabase } from './postgres-database.js';
import type { BenchUser, Target } from './target.js';

export const ADMIN = { username: 'admin', password: 'bench-admin-password-1' };
const START_TIMEOUT_MS = 180_000;
const MGMT = '/edge/management/v1';

export interface ControllerOptions {
  postgres: boolean;
  logLevel: string;
  users: BenchUser[];
  /** Extra Node options for the service process (`--cpu-prof …`). */
  nodeArgs?: string[];
  /** `node --import tsx src/main.ts` instead of building and running dist/ (the smoke check). */
  fromSource?: boolean;
  /** A built entry other than dist/src/main.js (A/B runs against a copy of an earlier build). */
  entry?: string;
  /** The V8 heap options, as `npm start` passes them; default CONTROLLER_NODE_OPTIONS. */
  heapOptions?: readonly string[];
}

/** How often a timed start asks /health/ready: the figure is exact to about this much. */
const TIMED_START_POLL_MS = 10;

async function waitReady(
  origin: string,
  dataDir: string,
  c: { output(): string; exited(): boolean },
  pollMs = 250,
) {
  const caPath = join(dataDir, 'pki', 'ca.pem');
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (c.exited()) throw new Error(`the controller exited during start: ${c.output()}`);
    if (existsSync(caPath)) {
      // Listeners are bound before routes are attached: a short timeout, then ask again.
      const probe = createBenchClient(origin, readFileSync(caPath, 'utf8'), 1, 2000);
      const status = await probe.getStatus('/health/ready').catch(() => 0);
      await probe.close();
      if (status === 200) return readFileSync(caPath, 'utf8');
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  throw new Error(`the controller was not ready in ${START_TIMEOUT_MS} ms: ${c.output()}`);
}

function expectStatus(step: string, status: number, expected: number, text: string): void {
  if (status !== expected) throw new Error(`seeding, ${step}: HTTP ${status} ${text.slice(0, 300)}`);
}

/** Users created and enrolled through the management and client APIs, as an admin would. */
async function seedUsers(client: BenchClient, users: BenchUser[]): Promise<void> {
  const login = await client.postJson(`${MGMT}/authenticate?method=password`, ADMIN);
  expectStatus('admin login', login.status, 200, login.text);
  const session = { 'svc-session': (JSON.parse(login.text) as { data: { token: string } }).data.token };
  for (const user of users) {
    const created = await client.postJson(
      `${MGMT}/identities`,
      { name: user.username, isAdmin: false, enrollment: { updb: user.username } },
      session,
    );
    expectStatus('create identity', created.status, 201, created.text);
    const id = (JSON.parse(created.text) as { data: { id: string } }).data.id;
    const detail = await client.get(`${MGMT}/identities/${id}`, session);
    expectStatus('identity detail', detail.status, 200, detail.text);
    const token = (JSON.parse(detail.text) as { data: { enrollment: { updb: { token: string } } } }).data
      .enrollment.updb.token;
    const enrolled = await client.postJson(`/edge/client/v1/enroll/updb?token=${encodeURIComponent(token)}`, {
      password: user.password,
    });
    expectStatus('enroll', enrolled.status, 200, enrolled.text);
  }
}

export interface ControllerTarget extends Target {
  databaseUrl?: string;
  /** RSS now and its peak since start, in MB (the service process; PostgreSQL not included). */
  memory(): Promise<{ rssMb: number; peakMb: number }>;
  /** Vacuums the PostgreSQL database (no-op on PGlite), between scenarios, outside any run. */
  settle(): Promise<void>;
  /**
   * Stops the service and starts it again on the same data dir and database (initialised by the
   * first start): milliseconds from the spawn to the first 200 of /health/ready.
   */
  restartTimed(): Promise<number>;
}

/**
 * The controller as `npm start` runs it: built (`npm run build`, a no-op when up to date), then
 * `node dist/src/main.js`, with its own data dir and either the embedded database (default) or a
 * fresh PostgreSQL database.
 * Rate limits are off: the load comes from one IP on purpose.
 */
export async function startController(
  o: ControllerOptions,
  /** Receives the cleanup before anything is created, so an interrupted start leaves nothing behind. */
  onCleanup: (cleanup: () => Promise<void>) => void,
): Promise<ControllerTarget> {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  let db: BenchDatabase | undefined;
  let child: ReturnType<typeof spawnNodeChild> | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = () =>
    (cleaning ??= (async () => {
      await child?.stop();
      await db?.drop().catch(() => undefined);
      rmSync(dataDir, { recursive: true, force: true });
    })());
  onCleanup(cleanup);
  try {
    db = o.postgres ? await createBenchDatabase() : undefined;
    const port = await freePort();
    const origin = `https://127.0.0.1:${port}`;
    if (!o.fromSource && !o.entry) execFileSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
    const spawnService = () =>
      spawnNodeChild(
        o.fromSource
          ? ['--import', 'tsx', join(process.cwd(), 'src', 'main.ts')]
          : [o.entry ?? join(process.cwd(), 'dist', 'src', 'main.js')],
        {
          SVC_ADDRESS: `127.0.0.1:${port}`,
          SVC_DATA_DIR: dataDir,
          SVC_ADMIN_USERNAME: ADMIN.username,
          SVC_ADMIN_PASSWORD: ADMIN.password,
          SVC_RATE_LIMITS_ENABLED: 'false',
          LOG_LEVEL: o.logLevel,
          ...(db ? { DATABASE_URL: db.url } : {}),
        },
        process.cwd(),
        [...(o.heapOptions ?? CONTROLLER_NODE_OPTIONS), ...(o.nodeArgs ?? [])],
      );
    const ready = (c: ReturnType<typeof spawnNodeChild>, pollMs?: number) =>
      waitReady(origin, dataDir, { output: c.output, exited: () => c.child.exitCode !== null }, pollMs);
    child = spawnService();
    const ca = await ready(child);
    const seeder = createBenchClient(origin, ca, 2);
    await seedUsers(seeder, o.users).finally(() => seeder.close());
    return {
      label: o.postgres ? 'service (PostgreSQL)' : 'service (PGlite)',
      origin,
      ...(db ? { databaseUrl: db.url } : {}),
      ca,
      async cpu() {
        const c = child!;
        const own = await processCpuMs(c.pid);
        if (own === undefined) throw new Error(`the controller is gone: ${c.output()}`);
        const databaseMs = db ? await db.backendsCpuMs() : 0;
        return { totalMs: own + databaseMs, databaseMs, statements: db?.statements() };
      },
      async memory() {
        const c = child!;
        const m = await processMemoryMb(c.pid);
        if (m === undefined) throw new Error(`the controller is gone: ${c.output()}`);
        return m;
      },
      settle: async () => db?.vacuum(),
      async restartTimed() {
        await child!.stop();
        const started = performance.now();
        child = spawnService();
        await ready(child, TIMED_START_POLL_MS);
        return performance.now() - started;
      },
      stop: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
