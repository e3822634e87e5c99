import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createBenchClient, type BenchClient } from './load/http-client.js';
import { passwordLogin } from './load/oidc-flow.js';
import { median } from './stats.js';
import { AUDIT_TARGET, auditMeasures, meetsAuditTarget, seedAuditEvents } from './scale-audit.js';
import { ADMIN } from './targets/controller-target.js';
import type { BenchUser } from './targets/target.js';

/**
 * `npm run bench -- --scale`: the same requests at a small and at a large number of identities.
 * The extra identities are inserted in SQL (one `INSERT … SELECT generate_series` per batch), each
 * with a password authenticator carrying one hash made by the service itself, so no Argon2id runs
 * per row. Latencies are of sequential requests on one connection: the question is how a request
 * grows with the table, not throughput. The audit event list is measured the same way at 1,000 and
 * at that many stored events (bench/scale-audit.ts), each with a target.
 */

export const SMALL_ROWS = 1000;
const BATCH_ROWS = 100_000;
const MGMT = '/edge/management/v1';

interface Measure {
  title: string;
  samples: number;
  run(): Promise<void>;
}

export interface ScaleRow {
  title: string;
  smallMs: number;
  largeMs: number;
  /** Judged against AUDIT_TARGET (the audit event list). */
  judged?: boolean;
}

/** The number of identities of the large run: 1,000,000 unless SVC_BENCH_SCALE_ROWS says otherwise. */
export function largeRows(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.SVC_BENCH_SCALE_ROWS ?? '1000000';
  const n = Number(text);
  if (!Number.isInteger(n) || n <= SMALL_ROWS)
    throw new Error(`SVC_BENCH_SCALE_ROWS: an integer above ${SMALL_ROWS}`);
  return n;
}

/** Adds filler identities (and their password authenticators) until the table holds `total`. */
async function growTo(db: pg.Client, total: number, progress: (line: string) => void): Promise<void> {
  const { rows } = await db.query<{ n: string }>('select count(*) as n from identities');
  let have = Number(rows[0]!.n);
  const hash = await db.query<{ password_hash: string }>(
    "select password_hash from authenticators where method = 'updb' and password_hash is not null limit 1",
  );
  if (hash.rows.length === 0) throw new Error('no password hash to copy: seed the bench users first');
  while (have < total) {
    const from = have + 1;
    const to = Math.min(total, have + BATCH_ROWS);
    await db.query('begin');
    await db.query(
      `insert into identities (id, name, type, is_admin, auth_policy_id)
         select 'scale-' || i, 'scale-identity-' || lpad(i::text, 8, '0'), 'User', false, 'default'
         from generate_series($1::int, $2::int) as i`,
      [from, to],
    );
    await db.query(
      `insert into authenticators (id, identity_id, method, username, password_hash)
         select 'scale-authn-' || i, 'scale-' || i, 'updb', 'scale-identity-' || lpad(i::text, 8, '0'), $3
         from generate_series($1::int, $2::int) as i`,
      [from, to, hash.rows[0]!.password_hash],
    );
    await db.query('commit');
    have = to;
    progress(`  ${have.toLocaleString('en')} identities`);
  }
  // As autovacuum would soon do: fresh statistics and a visibility map for index-only scans.
  await db.query('vacuum analyze identities, authenticators');
}

async function sample(m: Measure): Promise<number> {
  for (let i = 0; i < Math.min(10, m.samples); i++) await m.run();
  const times: number[] = [];
  for (let i = 0; i < m.samples; i++) {
    const start = performance.now();
    await m.run();
    times.push(performance.now() - start);
  }
  return median(times);
}

function measures(client: BenchClient, user: BenchUser, bearer: string, session: string): Measure[] {
  const get = (path: string, headers: Record<string, string>) => async () => {
    const res = await client.get(path, headers);
    if (res.status !== 200) throw new Error(`GET ${path}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
  };
  const mgmt = { 'svc-session': session };
  const list = (query: string) => get(`${MGMT}/identities?${query}`, mgmt);
  return [
    {
      title: 'full login (PKCE, one Argon2id)',
      samples: 20,
      run: () => passwordLogin(client, user).then(() => undefined),
    },
    {
      title: 'bearer GET current-identity',
      samples: 300,
      run: get('/edge/client/v1/current-identity', { authorization: `Bearer ${bearer}` }),
    },
    { title: 'list, first page (limit 100)', samples: 100, run: list('limit=100') },
    {
      title: 'list, sort=name desc, offset 900',
      samples: 100,
      run: list('limit=100&sort=name%20desc&offset=900'),
    },
    {
      title: 'filter name = (exact)',
      samples: 100,
      run: list(`filter=${encodeURIComponent(`name = "${user.username}"`)}`),
    },
    {
      title: 'filter name contains',
      samples: 100,
      run: list(`filter=${encodeURIComponent(`name contains "${user.username.slice(-6)}"`)}&limit=100`),
    },
  ];
}

/** Measures at SMALL_ROWS, grows the table to `large`, measures again. */
export async function runScale(
  service: { origin: string; ca: string; databaseUrl?: string },
  user: BenchUser,
  large: number,
  progress: (line: string) => void,
): Promise<ScaleRow[]> {
  if (!service.databaseUrl) throw new Error('scale mode needs the service on PostgreSQL');
  const db = new pg.Client({ connectionString: service.databaseUrl });
  await db.connect();
  const client = createBenchClient(service.origin, service.ca, 1);
  try {
    const login = await client.postJson(`${MGMT}/authenticate?method=password`, ADMIN);
    if (login.status !== 200) throw new Error(`admin login: HTTP ${login.status}`);
    const session = (JSON.parse(login.text) as { data: { token: string } }).data.token;
    const bearer = (await passwordLogin(client, user)).accessToken;
    const all = measures(client, user, bearer, session);
    const getBody = async (path: string) => {
      const res = await client.get(path, { 'svc-session': session });
      if (res.status !== 200) throw new Error(`GET ${path}: HTTP ${res.status} ${res.text.slice(0, 200)}`);
      return res.text;
    };

    progress(`growing to ${SMALL_ROWS.toLocaleString('en')} identities`);
    await growTo(db, SMALL_ROWS, progress);
    const small: number[] = [];
    for (const m of all) {
      progress(`  ${m.title}`);
      small.push(await sample(m));
    }
    progress(`seeding ${SMALL_ROWS.toLocaleString('en')} audit events`);
    await seedAuditEvents(db, SMALL_ROWS, progress);
    const smallAudit: number[] = [];
    for (const m of auditMeasures(getBody)) {
      progress(`  ${m.title}`);
      smallAudit.push(await sample(m));
    }
    progress(
      `growing to ${large.toLocaleString('en')} identities (batches of ${BATCH_ROWS.toLocaleString('en')})`,
    );
    const started = performance.now();
    await growTo(db, large, progress);
    progress(`  seeded in ${((performance.now() - started) / 1000).toFixed(0)} s`);
    const rows: ScaleRow[] = [];
    for (const [i, m] of all.entries()) {
      progress(`  ${m.title}`);
      rows.push({ title: m.title, smallMs: small[i]!, largeMs: await sample(m) });
    }
    progress(`seeding ${large.toLocaleString('en')} audit events`);
    const seeding = performance.now();
    await seedAuditEvents(db, large, progress);
    progress(`  seeded in ${((performance.now() - seeding) / 1000).toFixed(0)} s`);
    for (const [i, m] of auditMeasures(getBody).entries()) {
      progress(`  ${m.title}`);
      rows.push({ title: m.title, smallMs: smallAudit[i]!, largeMs: await sample(m), judged: true });
    }
    return rows;
  } finally {
    await client.close();
    await db.end();
  }
}

export function formatScale(rows: ScaleRow[], large: number): string {
  const head = [
    'scenario',
    `p50 @ ${SMALL_ROWS.toLocaleString('en')}`,
    `p50 @ ${large.toLocaleString('en')}`,
    'ratio',
    'target',
  ];
  const body = rows.map((r) => [
    r.title,
    `${r.smallMs.toFixed(2)} ms`,
    `${r.largeMs.toFixed(2)} ms`,
    `${(r.largeMs / r.smallMs).toFixed(2)}×`,
    r.judged ? (meetsAuditTarget(r.smallMs, r.largeMs) ? 'PASS' : 'FAIL') : '—',
  ]);
  const table = [head, head.map(() => '---'), ...body].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
  return (
    `${table}\n\nTarget of the audit event rows: p50 at ${large.toLocaleString('en')} events within ` +
    `${AUDIT_TARGET.ratio}× of p50 at ${SMALL_ROWS.toLocaleString('en')}, or under ${AUDIT_TARGET.floorMs} ms.`
  );
}
