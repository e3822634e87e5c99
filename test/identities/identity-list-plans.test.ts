import { afterAll, beforeAll, expect, test } from '@jest/globals';
import pg from 'pg';
import { createDatabase, type Database } from '../../src/db/create-database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { identitiesRepository } from '../../src/repositories/identities-repository.js';
import { parseIdentityList } from '../../src/schemas/identity-schemas.js';
import { createTestDatabaseUrl, describeWithPostgres } from '../helpers/test-database.js';

/**
 * The identity list must cost in proportion to its page, not to the table: every statement it
 * runs is planned on indexes, and no plan node reads a large part of the table. The plans are
 * those of PostgreSQL (EXPLAIN ANALYZE) over enough rows that a sequential scan would be cheaper
 * to the planner if no index could serve the query.
 */

const ROWS = 50_000;
/** A node that touches more rows than this reads the table, not the page. */
const MAX_ROWS_PER_NODE = ROWS / 10;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

describeWithPostgres('identity list query plans on PostgreSQL', () => {
  let db: Database;
  /** Runs the captured statements as they are, with their native `$n` placeholders. */
  let client: pg.Client;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const created = (await createTestDatabaseUrl())!;
    drop = created.drop;
    db = createDatabase({ kind: 'pg', connectionString: created.url, poolMax: 2 });
    await migrateToLatest(db);
    client = new pg.Client({ connectionString: created.url });
    await client.connect();
    await db.knex.raw(
      `insert into identities (id, name, type, is_admin, auth_policy_id)
         select 'id-' || lpad(i::text, 7, '0'), 'ident-' || lpad(i::text, 7, '0'), 'User', false, 'default'
         from generate_series(1, ?) as i`,
      [ROWS],
    );
    await db.knex.raw('analyze identities');
  }, 120_000);
  afterAll(async () => {
    await client?.end();
    await db?.knex.destroy();
    await drop?.();
  });

  /** Every statement `identitiesRepository.list` runs for `query`, with its analyzed plan. */
  async function plansOf(query: Record<string, string>): Promise<{ sql: string; nodes: PlanNode[] }[]> {
    const statements: { sql: string; bindings: unknown[] }[] = [];
    const capture = (q: { sql: string; bindings?: unknown[] }) =>
      statements.push({ sql: q.sql, bindings: q.bindings ?? [] });
    db.knex.on('query', capture);
    try {
      await identitiesRepository.list(db.knex, parseIdentityList(query));
    } finally {
      db.knex.off('query', capture);
    }
    const plans = [];
    for (const s of statements) {
      const result = await client.query(`explain (analyze, format json) ${s.sql}`, s.bindings);
      const plan = (result.rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan;
      plans.push({ sql: s.sql, nodes: nodes(plan) });
    }
    return plans;
  }

  test.each([
    ['first page', { limit: '100' }, 100],
    ['sorted by name, descending, at an offset', { limit: '100', sort: 'name desc', offset: '900' }, 100],
    ['exact name', { filter: 'name = "ident-0004242"' }, 1],
    ['name contains', { filter: 'name contains "0004242"', limit: '100' }, 1],
  ])('%s: no sequential scan, no node reads the table', async (_title, query, pageSize) => {
    const page = await identitiesRepository.list(db.knex, parseIdentityList(query));
    expect(page.items).toHaveLength(pageSize);
    expect(page.pagination.totalCount).toBe(pageSize === 1 ? 1 : ROWS);

    const plans = await plansOf(query);
    expect(plans.length).toBeGreaterThan(0);
    for (const { sql, nodes: all } of plans) {
      const seqScans = all.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']);
      expect({ sql, seqScans }).toEqual({ sql, seqScans: [] });
      const heavy = all
        .map((n) => ({
          node: `${n['Node Type']} ${n['Relation Name'] ?? ''}`.trim(),
          rows:
            ((n['Actual Rows'] ?? 0) +
              (n['Rows Removed by Filter'] ?? 0) +
              (n['Rows Removed by Index Recheck'] ?? 0)) *
            (n['Actual Loops'] ?? 1),
        }))
        .filter((n) => n.rows > MAX_ROWS_PER_NODE);
      expect({ sql, heavy }).toEqual({ sql, heavy: [] });
    }
  });
});
