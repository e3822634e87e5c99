import { afterAll, expect, jest, test } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import pg from 'pg';
import { freePort, spawnController, type SpawnedController } from '../helpers/spawn-controller.js';
import { createTestDatabaseUrl, describeWithPostgres } from '../helpers/test-database.js';
import { waitFor } from '../helpers/wait-for.js';

// Four controller starts (tsx, migrations, PKI) on a loaded machine; every wait has its own bound.
jest.setTimeout(300_000);

const MGMT = '/edge/management/v1';
const WORKERS = 4;

/** Set on a socket once its TLS handshake is done: from then on a request on it counts as sent. */
const ESTABLISHED = Symbol('established');

/** A keep-alive agent that tells a failed connect apart from a failure after the request went out. */
function trackingAgent(ca: string): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: WORKERS, ca });
  const create = (agent as any).createConnection.bind(agent);
  (agent as any).createConnection = (options: unknown, cb: unknown) => {
    const socket = create(options, cb) as Socket & { [ESTABLISHED]?: boolean };
    socket.once('secureConnect', () => (socket[ESTABLISHED] = true));
    return socket;
  };
  return agent;
}

type Outcome =
  | { kind: 'answered'; status: number; body: any }
  | { kind: 'refused'; code: string }
  | { kind: 'lost'; error: string };

function attempt(
  port: number,
  agent: Agent,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
) {
  return new Promise<Outcome>((resolve) => {
    let socket: (Socket & { [ESTABLISHED]?: boolean }) | undefined;
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: body ? { ...headers, 'content-type': 'application/json' } : headers,
        // Far past the response deadline: an answer that does not come is a lost request.
        timeout: 60_000,
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          const json = String(res.headers['content-type']).includes('json') && text ? JSON.parse(text) : text;
          resolve({ kind: 'answered', status: res.statusCode!, body: json });
        });
        res.on('error', (err) => resolve({ kind: 'lost', error: `response: ${err.message}` }));
      },
    );
    req.on('socket', (s) => (socket = s as typeof socket));
    req.on('timeout', () => req.destroy(new Error('no answer within 60 s')));
    req.on('error', (err: NodeJS.ErrnoException) =>
      resolve(
        socket?.[ESTABLISHED]
          ? { kind: 'lost', error: `${err.code ?? ''} ${err.message}` }
          : { kind: 'refused', code: err.code ?? err.message },
      ),
    );
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

describeWithPostgres('a rolling restart of two instances on one PostgreSQL database', () => {
  let db: { url: string; drop: () => Promise<void> } | undefined;
  const running: SpawnedController[] = [];
  afterAll(async () => {
    for (const c of running) if (c.child.exitCode === null) c.child.kill('SIGKILL');
    await Promise.all(running.map((c) => c.exited));
    await db?.drop();
  });

  test('a client sending requests throughout loses none: each is answered or refused before it was sent', async () => {
    db = (await createTestDatabaseUrl())!;
    const ports = [await freePort(), await freePort()];
    const dirs = ports.map(() => mkdtempSync(join(tmpdir(), 'svc-roll-')));
    const start = async (i: number) => {
      const c = await spawnController(
        {
          SVC_DATA_DIR: dirs[i]!,
          DATABASE_URL: db!.url,
          SVC_RATE_LIMITS_ENABLED: 'false',
          LOG_LEVEL: 'warn',
        },
        ports[i],
      );
      running.push(c);
      return c;
    };
    const instances = await Promise.all([start(0), start(1)]);
    const ca = await waitFor(
      () => {
        try {
          return instances[0]!.ca();
        } catch {
          return undefined;
        }
      },
      { timeout: 180_000, what: 'the CA file' },
    );
    const agents = ports.map(() => trackingAgent(ca));
    const ready = (i: number) =>
      waitFor(
        async () => {
          if (instances[i]!.child.exitCode !== null)
            throw new Error(`instance exited: ${instances[i]!.output()}`);
          const r = await attempt(ports[i]!, agents[i]!, 'GET', '/health/ready', {});
          return r.kind === 'answered' && r.status === 200;
        },
        { timeout: 180_000, interval: 100, what: `instance ${i} to be ready` },
      );
    await Promise.all([ready(0), ready(1)]);

    const login = await attempt(
      ports[0]!,
      agents[0]!,
      'POST',
      `${MGMT}/authenticate?method=password`,
      {},
      {
        username: 'admin',
        password: 'admin-password-1',
      },
    );
    if (login.kind !== 'answered' || login.status !== 200)
      throw new Error(`login failed: ${JSON.stringify(login)}`);
    const headers = { 'svc-session': login.body.data.token as string };

    const counts = { sent: 0, answered: 0, retriedOnConnect: 0, lost: 0 };
    const statuses: Record<number, number> = {};
    const lostErrors: string[] = [];
    const created: string[] = [];
    let stop = false;
    const worker = async (w: number) => {
      for (let n = 0; !stop; n++) {
        const i = (w + n) % 2;
        // Mostly reads of the session's identity; every fifth a write that must not vanish.
        const write = n % 5 === 4;
        const outcome = write
          ? await attempt(ports[i]!, agents[i]!, 'POST', `${MGMT}/identities`, headers, {
              name: `roll-${w}-${n}`,
              isAdmin: false,
            })
          : await attempt(ports[i]!, agents[i]!, 'GET', `${MGMT}/current-identity`, headers);
        if (outcome.kind === 'refused') {
          // Nothing was sent: a client retries, here on the next instance in turn.
          counts.retriedOnConnect++;
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        counts.sent++;
        if (outcome.kind === 'lost') {
          counts.lost++;
          lostErrors.push(outcome.error);
          continue;
        }
        counts.answered++;
        statuses[outcome.status] = (statuses[outcome.status] ?? 0) + 1;
        if (write && outcome.status === 201) created.push(outcome.body.data.id);
      }
    };
    const load = Array.from({ length: WORKERS }, (_, w) => worker(w));
    const answeredAtLeast = (more: number) => {
      const target = counts.answered + more;
      return waitFor(() => counts.answered >= target, { timeout: 60_000, what: `${more} more answers` });
    };

    await answeredAtLeast(50);
    for (const i of [0, 1]) {
      instances[i]!.child.kill('SIGTERM');
      expect(await instances[i]!.exited).toBe(0);
      instances[i] = await start(i);
      await ready(i);
      await answeredAtLeast(50);
    }
    stop = true;
    await Promise.all(load);
    for (const agent of agents) agent.destroy();

    const byStatus = Object.entries(statuses)
      .map(([s, n]) => `${s}: ${n}`)
      .join(', ');
    process.stdout.write(
      `rolling restart: sent ${counts.sent}, answered ${counts.answered} (${byStatus}), ` +
        `retried on connect refused ${counts.retriedOnConnect}, lost ${counts.lost}\n`,
    );
    expect(lostErrors).toEqual([]);
    expect(counts.lost).toBe(0);
    expect(counts.answered).toBe(counts.sent);
    // Answers are the application's, or 503 from an instance starting or stopping.
    expect(Object.keys(statuses).filter((s) => !['200', '201', '503'].includes(s))).toEqual([]);
    // Every write answered 201 is in the database.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const found = await client.query('select count(*)::int as n from identities where id = any($1)', [
      created,
    ]);
    await client.end();
    expect(found.rows[0].n).toBe(created.length);

    for (const c of instances) c.child.kill('SIGTERM');
    expect(await Promise.all(instances.map((c) => c.exited))).toEqual([0, 0]);
  });
});
