import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { TestResponse } from '../helpers/https-client.js';
import { describeWithOwnCluster, startPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { freePort } from '../helpers/spawn-controller.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  adminSession,
  bearerStatus,
  login,
  SCALE,
  sleep,
  startInstance,
  type Instance,
} from './fault-fixtures.js';

const STATEMENT_TIMEOUT = '1s';
const POOL_MAX = 4;
/** A request that takes longer than this has hung: well past every timeout the instances have. */
const HANG_MS = 20_000;
const OUTAGE_MS = 3_000 * SCALE;

interface Probe {
  what: string;
  status: number | 'hang' | 'no answer';
  ms: number;
  body?: unknown;
}

async function timed(what: string, op: () => Promise<TestResponse>): Promise<Probe> {
  const start = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<'hang'>((r) => (timer = setTimeout(() => r('hang'), HANG_MS)));
  try {
    const res = await Promise.race([op(), hang]);
    if (res === 'hang') return { what, status: 'hang', ms: Date.now() - start };
    return { what, status: res.status, ms: Date.now() - start, body: res.body };
  } catch (err) {
    return { what, status: 'no answer', ms: Date.now() - start, body: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

/** A refusal a client can act on: 503 in the endpoint's documented error form. */
function isClear503(p: Probe): boolean {
  if (p.status !== 503) return false;
  const body = p.body as Record<string, any>;
  if (p.what.startsWith('ready')) return body?.status === 'unavailable';
  if (p.what.startsWith('token')) return body?.error === 'temporarily_unavailable';
  return body?.error?.code === 'SERVICE_UNAVAILABLE' && typeof body?.error?.requestId === 'string';
}

describeWithOwnCluster('database restart and slow database under two instances', () => {
  let cluster: PgCluster;
  let a: Instance;
  let b: Instance;
  let session: string;

  beforeAll(async () => {
    cluster = await startPgCluster();
    const frontPort = await freePort();
    const env = {
      SVC_DATABASE_STATEMENT_TIMEOUT: STATEMENT_TIMEOUT,
      SVC_DATABASE_ACQUIRE_TIMEOUT: '2s',
      SVC_DATABASE_POOL_MAX: String(POOL_MAX),
    };
    // One instance of each change feed: revocations must cross in both directions either way.
    a = await startInstance('a', {
      databaseUrl: cluster.url,
      frontPort,
      env: { ...env, SVC_DATABASE_CHANGE_FEED: 'listen' },
    });
    b = await startInstance('b', {
      databaseUrl: cluster.url,
      frontPort,
      env: { ...env, SVC_DATABASE_CHANGE_FEED: 'poll' },
    });
    session = await adminSession(a);
  }, 240_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await cluster?.destroy();
  }, 60_000);

  const mgmt = (via: Instance, method: 'get' | 'post' | 'delete', path: string, body?: unknown) =>
    via.client[method](`/edge/management/v1${path}`, { headers: { 'svc-session': session }, body });

  /** A user with a password, logged in by PKCE; returns its id and tokens. */
  async function user(name: string) {
    const created = await mgmt(a, 'post', '/identities', {
      name,
      type: 'User',
      isAdmin: false,
      enrollment: { updb: name },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    const detail = await mgmt(a, 'get', `/identities/${id}`);
    const password = `Pw-${name}-1234`;
    const enrolled = await a.client.post(
      `/edge/client/v1/enroll/updb?token=${detail.body.data.enrollment.updb.token}`,
      { body: { password } },
    );
    expect(enrolled.status).toBe(200);
    return { id, tokens: await login([a, b, a], name, password) };
  }

  const listeners = async () => {
    const db = await cluster.connect();
    try {
      const r = await db.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'svc-controller-listen'`,
      );
      return r.rows[0].n as number;
    } finally {
      await db.end();
    }
  };

  for (const mode of ['fast', 'immediate'] as const) {
    test(
      `pg_ctl stop -m ${mode} and start: clear 503s meanwhile, recovery by itself, revocations cross`,
      async () => {
        const one = await user(`restart-${mode}-1`);
        const two = await user(`restart-${mode}-2`);
        // One refresh chain per instance: two parallel refreshes of one token would be a replay.
        const chains = { a: (await login([a, a, a])).refresh, b: (await login([b, b, b])).refresh };
        expect([await bearerStatus(b, one.tokens.access), await bearerStatus(a, two.tokens.access)]).toEqual([
          200, 200,
        ]);
        expect(await listeners()).toBe(1); // a listens, b polls

        // Probes against both instances all along: readiness, a management read, a token refresh.
        const probes: Probe[] = [];
        let probing = true;
        const prober = (async () => {
          while (probing) {
            const round = await Promise.all(
              [a, b].flatMap((via) => [
                timed(`ready ${via.name}`, () => via.client.get('/health/ready')),
                timed(`list ${via.name}`, () => mgmt(via, 'get', '/identities?limit=1')),
                timed(`token ${via.name}`, () =>
                  via.client.post('/oidc/token', {
                    form: {
                      grant_type: 'refresh_token',
                      refresh_token: chains[via.name as 'a' | 'b'],
                      client_id: 'svc',
                    },
                  }),
                ),
              ]),
            );
            for (const p of round) {
              if (p.what.startsWith('token') && p.status === 200)
                chains[p.what.slice(-1) as 'a' | 'b'] = (p.body as any).refresh_token;
            }
            probes.push(...round);
            await sleep(200);
          }
        })();

        await sleep(500);
        await cluster.stop(mode);
        const downAt = Date.now();
        await sleep(OUTAGE_MS);
        const duringOutage = probes.length;
        await cluster.start();
        const upAt = Date.now();

        // Each instance recovers by itself: its pool reconnects.
        const recovered = await Promise.all(
          [a, b].map(async (via) => {
            await waitFor(async () => (await mgmt(via, 'get', '/identities?limit=1')).status === 200, {
              timeout: 30_000,
              interval: 50,
              what: `${via.name} to answer again`,
            });
            return Date.now() - upAt;
          }),
        );
        // Revocations made at once after recovery, one on each side, enforced on the other; timed
        // from the moment each deletion was answered.
        const revokeAndWatch = async (on: Instance, other: Instance, id: string, access: string) => {
          const res = await mgmt(on, 'delete', `/identities/${id}`);
          const answeredAt = Date.now();
          const ms = await waitFor(
            async () => (await bearerStatus(other, access)) === 401 && Date.now() - answeredAt,
            {
              timeout: 15_000,
              interval: 25,
              what: `the revocation on ${on.name} to reach ${other.name}`,
            },
          );
          return { status: res.status, ms };
        };
        const crossed = await Promise.all([
          revokeAndWatch(a, b, one.id, one.tokens.access),
          revokeAndWatch(b, a, two.id, two.tokens.access),
        ]);
        const resubscribed = await waitFor(async () => (await listeners()) === 1 && Date.now() - upAt, {
          timeout: 30_000,
          interval: 100,
          what: 'the LISTEN connection of a to subscribe again',
        });
        probing = false;
        await prober;

        const outage = probes.slice(0, duringOutage).filter((p) => p.status !== 200);
        const bad = probes.filter((p) => p.status !== 200 && !isClear503(p));
        const slowest = Math.max(...probes.map((p) => p.ms));
        process.stdout.write(
          `database stop -m ${mode}, ${OUTAGE_MS} ms down: ${probes.length} probes, ${outage.length} refused meanwhile ` +
            `(all clear 503: ${bad.length === 0}), slowest answer ${slowest} ms\n` +
            `  recovered ${recovered[0]} ms (a, listen) / ${recovered[1]} ms (b, poll) after the database was back; ` +
            `LISTEN subscribed again after ${resubscribed} ms\n` +
            `  revocation right after recovery enforced on the other instance ${crossed[0].ms} ms (a→b) and ` +
            `${crossed[1].ms} ms (b→a) after the deletion was answered\n`,
        );

        expect(bad).toEqual([]);
        expect(outage.some((p) => p.what === 'ready a' && p.status === 503)).toBe(true);
        expect(outage.some((p) => p.what === 'ready b' && p.status === 503)).toBe(true);
        expect(outage.some((p) => p.what.startsWith('list') && p.status === 503)).toBe(true);
        expect(outage.some((p) => p.what.startsWith('token') && p.status === 503)).toBe(true);
        expect(crossed.map((c) => c.status)).toEqual([200, 200]);
        expect([a.process.child.exitCode, b.process.child.exitCode]).toEqual([null, null]);
        expect(Date.now() - downAt).toBeGreaterThan(0);
      },
      120_000 + 30_000 * SCALE,
    );
  }

  test('a lock held on a hot table: requests fail with a clear 503 after the statement timeout, no connection leaks', async () => {
    const holder = await cluster.connect();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE identities IN ACCESS EXCLUSIVE MODE');
    let blocked: Probe[];
    try {
      // Three times the pool of each instance: they queue for connections as well as for the lock.
      blocked = await Promise.all(
        Array.from({ length: 3 * POOL_MAX }, (_, i) => {
          const via = i % 2 ? b : a;
          return timed(`list ${via.name}`, () => mgmt(via, 'get', '/identities?limit=1'));
        }),
      );
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    const after = await Promise.all(
      Array.from({ length: 3 * POOL_MAX }, (_, i) =>
        timed('list', () => mgmt(i % 2 ? b : a, 'get', '/identities?limit=1')),
      ),
    );
    // Afterwards every connection of the instances is idle and within their pools.
    const db = await cluster.connect();
    const connections = await waitFor(
      async () => {
        const r = await db.query<{ state: string; n: number }>(
          `SELECT coalesce(state, '?') AS state, count(*)::int AS n FROM pg_stat_activity
            WHERE application_name = 'svc-controller' GROUP BY 1`,
        );
        const byState = Object.fromEntries(r.rows.map((row) => [row.state, row.n]));
        return Object.keys(byState).every((s) => s === 'idle') && byState;
      },
      { timeout: 15_000, what: 'every pooled connection to be idle' },
    );
    await db.end();

    const times = blocked.map((p) => p.ms).sort((x, y) => x - y);
    process.stdout.write(
      `slow database (statement timeout ${STATEMENT_TIMEOUT}, pool ${POOL_MAX} per instance): ` +
        `${blocked.length} requests behind a lock answered ${[...new Set(blocked.map((p) => p.status))].join('/')} ` +
        `in ${times[0]}–${times[times.length - 1]} ms; afterwards ${after.filter((p) => p.status === 200).length}/${after.length} ` +
        `succeed; connections ${JSON.stringify(connections)}\n`,
    );

    expect(blocked.filter((p) => !isClear503(p))).toEqual([]);
    expect(after.map((p) => p.status)).toEqual(after.map(() => 200));
    expect((connections as Record<string, number>).idle).toBeLessThanOrEqual(2 * POOL_MAX);
  }, 120_000);

  test('a revocation on one instance is enforced by the other in both change-feed modes', async () => {
    const one = await user('feed-1');
    const two = await user('feed-2');
    const [viaListen, viaPoll] = await Promise.all([
      mgmt(a, 'delete', `/identities/${one.id}`),
      mgmt(b, 'delete', `/identities/${two.id}`),
    ]);

    const arrived = await Promise.all([
      waitFor(async () => (await bearerStatus(b, one.tokens.access)) === 401, {
        timeout: 10_000,
        interval: 25,
      }),
      waitFor(async () => (await bearerStatus(a, two.tokens.access)) === 401, {
        timeout: 10_000,
        interval: 25,
      }),
    ]);
    expect([viaListen.status, viaPoll.status]).toEqual([200, 200]);
    expect(arrived).toEqual([true, true]);
  }, 60_000);
});
