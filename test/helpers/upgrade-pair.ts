import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as oc from 'openid-client';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { createHttpsClient, perRequestClient, type HttpsClient } from './https-client.js';
import { startRoundRobinFront, type RoundRobinFront } from './round-robin-front.js';
import { freePort, spawnController, type SpawnedController } from './spawn-controller.js';
import { createTestDatabaseUrl } from './test-database.js';

export const ADMIN_PASSWORD = 'admin-password-1';

/** One of the two processes: a release's checkout, its port, its data directory. */
export interface UpgradeSide {
  name: 'previous' | 'current';
  root: string;
  port: number;
  dataDir: string;
  process: SpawnedController;
  /** Talks to this process alone, with the Host clients of the front send. */
  client: HttpsClient;
  /** openid-client's fetch to this process alone. */
  oidcFetch: oc.CustomFetch;
}

export interface UpgradePair {
  previous: UpgradeSide;
  current: UpgradeSide;
  front: RoundRobinFront;
  /** https://127.0.0.1:<front> — the one address both processes answer for. */
  base: string;
  issuer: string;
  ca: string;
  dbUrl: string;
  /** A client through the front that opens a connection per request (each may land elsewhere). */
  viaFront(): HttpsClient;
  /** openid-client's fetch through the front, a connection per request. */
  frontFetch: oc.CustomFetch;
  /** Stops the side (SIGTERM) and resolves with its exit code. */
  stop(side: UpgradeSide): Promise<number | null>;
  /** Starts the side again on its port, data directory and the same database; resolves once ready. */
  restart(side: UpgradeSide): Promise<void>;
  /** Starts another process of the side, without waiting for anything. */
  spawnAgain(side: UpgradeSide): Promise<SpawnedController>;
  close(): Promise<void>;
}

/** A fetch for openid-client over one undici agent; its body is read here when `once` is set. */
function fetchOver(agentFor: () => Agent, once: boolean): oc.CustomFetch {
  return async (url, options) => {
    const agent = agentFor();
    const res = await undiciFetch(url, { ...(options as object), dispatcher: agent });
    if (!once) return res as unknown as Response;
    const body = [101, 204, 205, 304].includes(res.status) ? null : await res.arrayBuffer();
    await agent.close();
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

function pinnedAgent(ca: string, port: number): Agent {
  const connector = buildConnector({ ca });
  return new Agent({ connect: (opts, cb) => connector({ ...opts, port: String(port) }, cb) });
}

/** Polls /health/ready on the process itself; an exit ends the wait at once. */
async function untilReady(c: SpawnedController, base: string, port: number, ca: () => string): Promise<void> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (c.child.exitCode !== null) throw new Error(`controller exited ${c.child.exitCode}: ${c.output()}`);
    try {
      const client = createHttpsClient(base, { ca: ca(), connectPort: port });
      const status = await client
        .get('/health/ready')
        .then((r) => r.status)
        .finally(() => client.close());
      if (status === 200) return;
    } catch {
      // Not listening yet, or its CA file not written yet.
    }
    if (Date.now() > deadline) throw new Error(`controller did not become ready: ${c.output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The previous release and the current code on one fresh PostgreSQL database behind one
 * round-robin front, both answering for its address (the issuer): the previous release first, so
 * that it migrates the empty database to its level, then the current code, which migrates on.
 * Rate limits are off (every request comes from 127.0.0.1); the key rotation grace is short.
 */
export async function startUpgradePair(
  previousRoot: string,
  env: Record<string, string> = {},
): Promise<UpgradePair> {
  const db = await createTestDatabaseUrl();
  if (!db) throw new Error('an upgrade pair needs PostgreSQL: set TEST_DATABASE_URL');
  const ports = [await freePort(), await freePort()];
  const front = await startRoundRobinFront(ports);
  const base = `https://127.0.0.1:${front.port}`;
  const spawned: SpawnedController[] = [];
  const dirs: string[] = [];
  let ca = '';
  const agents: Agent[] = [];

  const spawn = async (side: Omit<UpgradeSide, 'process' | 'client' | 'oidcFetch'>) => {
    const c = await spawnController(
      {
        SVC_DATA_DIR: side.dataDir,
        DATABASE_URL: db.url,
        SVC_ADVERTISED_ADDRESS: `127.0.0.1:${front.port}`,
        SVC_RATE_LIMITS_ENABLED: 'false',
        SVC_ADMIN_PASSWORD: ADMIN_PASSWORD,
        LOG_LEVEL: 'warn',
        ...env,
      },
      side.port,
      [],
      [],
      side.root,
    );
    spawned.push(c);
    return c;
  };
  const caOf = () => (ca ||= readFileSync(join(dirs[0]!, 'pki', 'ca.pem'), 'utf8'));
  const launch = async (side: Omit<UpgradeSide, 'process' | 'client' | 'oidcFetch'>) => {
    const c = await spawn(side);
    await untilReady(c, base, side.port, caOf);
    return c;
  };
  /** Direct clients of a (re)started process: fresh connections, none left from before a restart. */
  const connectTo = (side: UpgradeSide | Omit<UpgradeSide, 'client' | 'oidcFetch'>) => {
    const agent = pinnedAgent(ca, side.port);
    agents.push(agent);
    return {
      client: createHttpsClient(base, { ca, connectPort: side.port }),
      oidcFetch: fetchOver(() => agent, false),
    };
  };
  const sideAt = async (name: UpgradeSide['name'], root: string, port: number): Promise<UpgradeSide> => {
    const dataDir = mkdtempSync(join(tmpdir(), `svc-upgrade-${name}-`));
    dirs.push(dataDir);
    const started = { name, root, port, dataDir, process: await launch({ name, root, port, dataDir }) };
    return { ...started, ...connectTo(started) };
  };

  const close = async () => {
    for (const c of spawned) if (c.child.exitCode === null) c.child.kill('SIGTERM');
    await Promise.all(spawned.map((c) => c.exited));
    await Promise.all(agents.map((a) => a.close()));
    await front.close();
    await db.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  try {
    const previous = await sideAt('previous', previousRoot, ports[0]!);
    const current = await sideAt('current', process.cwd(), ports[1]!);
    return {
      previous,
      current,
      front,
      base,
      issuer: `${base}/oidc`,
      ca,
      dbUrl: db.url,
      viaFront: () => perRequestClient(base, { ca }),
      frontFetch: fetchOver(() => new Agent({ connect: { ca } }), true),
      async stop(side) {
        side.process.child.kill('SIGTERM');
        return side.process.exited;
      },
      async restart(side) {
        await side.client.close();
        side.process = await launch(side);
        Object.assign(side, connectTo(side));
      },
      spawnAgain: spawn,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
