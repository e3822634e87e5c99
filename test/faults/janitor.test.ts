import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import type { Database } from '../../src/db/create-database.js';
import { instanceLockFor } from '../../src/db/instance-lock-for.js';
import { deleteExpiredOidcPayloads } from '../../src/oidc/oidc-janitor.js';
import { deleteExpiredRows, janitorPass } from '../../src/services/janitor.js';
import { authorizationPath, newPkce } from '../helpers/oidc-client.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

jest.setTimeout(300_000);

const BURST = 100_000;
const MGMT = '/edge/management/v1';

interface Sample {
  startedAt: number;
  endedAt: number;
  ok: boolean;
}

describeWithPostgres('the janitor under a burst of expired rows', () => {
  let server: TestServer;
  let session: Record<string, string>;
  let adminId: string;

  beforeAll(async () => {
    server = await startTestServer();
    session = { 'svc-session': await server.adminToken() };
    adminId = (await server.client.get(`${MGMT}/current-identity`, { headers: session })).body.data.id;
  });
  afterAll(() => server?.close());

  /** What the janitors must remove: rows expired past every margin, in the tables they clean. */
  async function expiredCounts(now: Date) {
    const knex = server.app.knex;
    const oidcBefore = new Date(now.getTime() - 5 * 60_000);
    const count = async (q: Promise<{ n: number }[]>) => Number((await q)[0]!.n);
    return {
      oidc: await count(knex('oidc_payloads').where('expires_at', '<', oidcBefore).count({ n: '*' })),
      sessions: await count(knex('api_sessions').where('expires_at', '<', now).count({ n: '*' })),
      revocations: await count(knex('revocations').where('expires_at', '<', now).count({ n: '*' })),
      loginWindows: await count(
        knex('login_address_failures')
          .where('window_started_at', '<=', new Date(now.getTime() - 3600_000))
          .count({ n: '*' }),
      ),
    };
  }

  test('one instance at a time removes 100,000 expired rows in batches while requests keep being answered', async () => {
    const knex = server.app.knex;
    const longAgo = new Date(Date.now() - 2 * 3600_000);
    // 50,000 provider rows (auth requests, codes, refresh tokens, sessions), 30,000 API sessions,
    // 10,000 revocations, 10,000 ended hourly failure windows; and rows that must stay.
    await knex.raw(
      `INSERT INTO oidc_payloads (model, id, payload, expires_at, consumed_at)
       SELECT (ARRAY['Interaction','AuthorizationCode','RefreshToken','Session'])[1 + i % 4],
              md5('expired' || i), '{}', ?, CASE WHEN i % 4 = 1 THEN ?::timestamptz END
       FROM generate_series(1, 50000) AS i`,
      [longAgo, longAgo],
    );
    await knex.raw(
      `INSERT INTO oidc_payloads (model, id, payload, expires_at, consumed_at)
       SELECT 'AuthorizationCode', 'kept-' || i, '{}', now() - interval '1 minute', now() - interval '2 minutes'
       FROM generate_series(1, 500) AS i`,
    );
    await knex.raw(
      `INSERT INTO api_sessions (id, identity_id, kind, expires_at)
       SELECT 'kept-' || i, ?, 'legacy', now() + interval '1 hour' FROM generate_series(1, 500) AS i`,
      [adminId],
    );
    await knex.raw(
      `INSERT INTO api_sessions (id, identity_id, kind, expires_at)
       SELECT md5('session' || i), ?, 'legacy', ? FROM generate_series(1, 30000) AS i`,
      [adminId, longAgo],
    );
    await knex.raw(
      `INSERT INTO revocations (kind, subject, expires_at)
       SELECT 'api_session', md5('revoked' || i), ? FROM generate_series(1, 10000) AS i`,
      [longAgo],
    );
    await knex.raw(
      `INSERT INTO login_address_failures (identity_id, client_address, window_started_at, in_window)
       SELECT ?, '10.' || (i / 65536) || '.' || (i / 256 % 256) || '.' || (i % 256), ?, 3
       FROM generate_series(1, 10000) AS i`,
      [adminId, longAgo],
    );
    const expired = await expiredCounts(new Date());
    expect(Object.values(expired).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(BURST);

    // Requests that read and write the tables being cleaned: the admin's legacy session
    // (api_sessions) and new authorization requests (oidc_payloads).
    const samples: Sample[] = [];
    let stop = false;
    const load = Array.from({ length: 4 }, async (_, worker) => {
      for (let i = 0; !stop; i++) {
        const startedAt = performance.now();
        const res =
          (i + worker) % 2 === 0
            ? await server.client.get(`${MGMT}/current-identity`, { headers: session })
            : await server.client.get(authorizationPath({}, newPkce(), `s${worker}-${i}`, `n${worker}-${i}`));
        samples.push({ startedAt, endedAt: performance.now(), ok: res.status === 200 || res.status === 303 });
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));

    // Two instances' janitors at once: each section is run by one of them, the other skips it.
    const database: Database = {
      knex,
      kind: 'pg',
      target: { kind: 'pg', connectionString: server.databaseUrl!, poolMax: 10 },
    };
    const now = new Date();
    const passStart = performance.now();
    const passes = await Promise.all(
      [0, 1].flatMap(() => [
        janitorPass(instanceLockFor(database, 'janitor'), () => deleteExpiredRows(knex, now)),
        janitorPass(instanceLockFor(database, 'oidcJanitor'), () => deleteExpiredOidcPayloads(knex, now)),
      ]),
    );
    const passEnd = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 500));
    stop = true;
    await Promise.all(load);

    const ran = passes.filter((p) => p.ran);
    expect(ran).toHaveLength(2);
    const removed = ran.map((p) => (p.ran ? p.value : 0));
    expect(await expiredCounts(new Date())).toEqual({
      oidc: 0,
      sessions: 0,
      revocations: 0,
      loginWindows: 0,
    });
    // Rows not yet expired, or within the replay margin of consumed codes, stay.
    const kept = async (table: string) =>
      Number((await knex(table).where('id', 'like', 'kept-%').count({ n: '*' }))[0]!.n);
    expect(await kept('oidc_payloads')).toBe(500);
    expect(await kept('api_sessions')).toBe(500);
    expect((await server.client.get(`${MGMT}/current-identity`, { headers: session })).status).toBe(200);

    const during = samples.filter((s) => s.endedAt >= passStart && s.startedAt <= passEnd);
    const before = samples.filter((s) => s.endedAt < passStart);
    const maxMs = (xs: Sample[]) => Math.max(0, ...xs.map((s) => s.endedAt - s.startedAt));
    expect(samples.every((s) => s.ok)).toBe(true);
    expect(during.length).toBeGreaterThan(0);
    console.log(
      [
        `janitor pass over ${BURST} expired rows: ${((passEnd - passStart) / 1000).toFixed(2)} s`,
        `  removed: ${JSON.stringify(removed)}`,
        `  requests answered during the pass: ${during.length}, max latency ${maxMs(during).toFixed(0)} ms ` +
          `(before it: ${before.length} requests, max ${maxMs(before).toFixed(0)} ms)`,
      ].join('\n'),
    );
  });
});
