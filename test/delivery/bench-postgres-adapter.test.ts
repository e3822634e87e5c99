// Baseline (c) of `npm run bench` is only a fair yardstick if its storage does the durable work it
// claims: rows in PostgreSQL, a consume that exactly one caller wins, the login's extra rows, and
// no provider Session (the service stores none).
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import pg from 'pg';
import { errors } from 'oidc-provider';
import {
  createBaselineSchema,
  createPostgresAdapterClass,
  recordLogin,
} from '../../bench/baselines/postgres-adapter.js';
import { createTestDatabaseUrl, describeWithPostgres } from '../helpers/test-database.js';

describeWithPostgres("bench baseline (c)'s PostgreSQL adapter", () => {
  let database: { url: string; drop: () => Promise<void> };
  let pool: pg.Pool;
  let Adapter: ReturnType<typeof createPostgresAdapterClass>;

  beforeAll(async () => {
    database = (await createTestDatabaseUrl())!;
    pool = new pg.Pool({ connectionString: database.url, max: 4 });
    await createBaselineSchema(pool);
    Adapter = createPostgresAdapterClass(pool);
  });
  afterAll(async () => {
    await pool.end();
    await database.drop();
  });

  const count = async (sql: string) => Number((await pool.query<{ n: string }>(sql)).rows[0]!.n);

  test('a refresh token is stored, found, and consumed by exactly one of two concurrent callers', async () => {
    const tokens = new Adapter('RefreshToken');
    await tokens.upsert('rt-1', { grantId: 'g-1', accountId: 'user' }, 60);
    expect(await tokens.find('rt-1')).toEqual({ grantId: 'g-1', accountId: 'user' });

    const outcomes = await Promise.allSettled([tokens.consume('rt-1'), tokens.consume('rt-1')]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const refused = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(errors.InvalidGrant);
    expect((await tokens.find('rt-1'))?.consumed).toEqual(expect.any(Number));

    await tokens.revokeByGrantId('g-1');
    expect(await tokens.find('rt-1')).toBeUndefined();
  });

  test('an expired row is not found; a destroyed one is gone', async () => {
    const interactions = new Adapter('Interaction');
    await interactions.upsert('i-1', { uid: 'u-1' }, 60);
    expect(await interactions.findByUid('u-1')).toEqual({ uid: 'u-1' });
    await pool.query("UPDATE oidc_payloads SET expires_at = now() - interval '1 second' WHERE id = 'i-1'");
    expect(await interactions.find('i-1')).toBeUndefined();
    await interactions.destroy('i-1');
    expect(await count("SELECT count(*) AS n FROM oidc_payloads WHERE id = 'i-1'")).toBe(0);
  });

  test("the provider's Session is not stored; a login writes its facts and an API session", async () => {
    await new Adapter('Session').upsert('s-1', { uid: 'su-1', accountId: 'user' }, 60);
    expect(await count("SELECT count(*) AS n FROM oidc_payloads WHERE model = 'Session'")).toBe(0);

    await recordLogin(pool, 'user', 3600);
    expect(await count("SELECT count(*) AS n FROM oidc_payloads WHERE model = 'LoginFacts'")).toBe(1);
    expect(await count("SELECT count(*) AS n FROM api_sessions WHERE account_id = 'user'")).toBe(1);
  });
});
