import { afterAll, beforeAll, expect, test } from '@jest/globals';
import pg from 'pg';
import { createDatabase, type Database } from '../../src/db/create-database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { auditEventListRepository, PROBE_ROWS } from '../../src/repositories/audit-event-list-repository.js';
import { parseAuditEventList } from '../../src/schemas/audit-event-schemas.js';
import { encodeTrailCursor } from '../../src/schemas/trail-cursor.js';
import { createTestDatabaseUrl, describeWithPostgres } from '../helpers/test-database.js';

/**
 * A page of the audit trail must cost in proportion to the page (or, for a time range far from
 * the head, to the range), not to the trail: every statement is planned on indexes, and no plan
 * node reads more than the probe's bound. Plans are PostgreSQL's (EXPLAIN ANALYZE) over enough
 * rows that reading the table would show.
 */

const ROWS = 100_000;
/** 90 days of events, evenly spaced, the newest a second ago. */
const SPACING_S = (90 * 86_400) / ROWS;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

describeWithPostgres('audit event list query plans on PostgreSQL', () => {
  let db: Database;
  let client: pg.Client;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const created = (await createTestDatabaseUrl())!;
    drop = created.drop;
    db = createDatabase({ kind: 'pg', connectionString: created.url, poolMax: 2 });
    await migrateToLatest(db);
    client = new pg.Client({ connectionString: created.url });
    await client.connect();
    await client.query(
      `insert into audit_events (occurred_at, event, outcome, identity_id, actor_id, source_address, details)
         select now() - interval '1 second' - (($1::int - i) * $2::float8 * interval '1 second'),
           'event.' || (i % 20), case when i % 5 = 0 then 'failure' when i % 5 = 1 then 'success' end,
           'identity-' || (i % 5000), case when i % 10 = 0 then 'admin-' || (i / 10 % 100) end,
           '10.0.' || (i % 2000 / 256) || '.' || (i % 256), '{}'
         from generate_series(1, $1::int) as i`,
      [ROWS, SPACING_S],
    );
    await client.query('vacuum analyze audit_events');
  }, 180_000);
  afterAll(async () => {
    await client?.end();
    await db?.knex.destroy();
    await drop?.();
  });

  /** Every statement one page runs, with its analyzed plan's nodes. */
  async function plansOf(query: Record<string, string>): Promise<{ sql: string; nodes: PlanNode[] }[]> {
    const statements: { sql: string; bindings: unknown[] }[] = [];
    const capture = (q: { sql: string; bindings?: unknown[] }) =>
      statements.push({ sql: q.sql, bindings: q.bindings ?? [] });
    db.knex.on('query', capture);
    try {
      await auditEventListRepository.page(db.knex, parseAuditEventList(query));
    } finally {
      db.knex.off('query', capture);
    }
    const plans = [];
    for (const s of statements) {
      const result = await client.query(`explain (analyze, format json) ${s.sql}`, s.bindings);
      plans.push({
        sql: s.sql,
        nodes: nodes((result.rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0]!.Plan),
      });
    }
    return plans;
  }

  const ago = (seconds: number) => new Date(Date.now() - seconds * 1000).toISOString();
  const cases: [string, string][] = [
    ['no filter', ''],
    ['event', 'event = "event.7"'],
    ['outcome', 'outcome = "failure"'],
    ['identityId', 'identityId = "identity-42"'],
    ['actorId', 'actorId = "admin-7"'],
    ['sourceAddress', 'sourceAddress = "10.0.3.42"'],
    ['the last hour', `occurredAt >= "${ago(3600)}"`],
    ['a day a month ago', `occurredAt >= "${ago(31 * 86_400)}" and occurredAt < "${ago(30 * 86_400)}"`],
  ];

  test.each(cases)('%s: index scans only, no node reads more than the probe bound', async (_, filter) => {
    for (const extra of [{}, { limit: '500' }] as Record<string, string>[]) {
      const plans = await plansOf({ filter, ...extra });
      expect(plans.length).toBeGreaterThan(0);
      for (const { sql, nodes: all } of plans) {
        const scans = all.filter((n) => n['Relation Name'] === 'audit_events');
        expect({ sql, seqScans: scans.filter((n) => n['Node Type'] === 'Seq Scan').length }).toEqual({
          sql,
          seqScans: 0,
        });
        expect(scans.length).toBeGreaterThan(0);
        for (const n of all) {
          const read =
            ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1);
          expect({ sql, node: n['Node Type'], read: read <= PROBE_ROWS }).toEqual({
            sql,
            node: n['Node Type'],
            read: true,
          });
        }
      }
    }
  });

  test('an equality filter with a cursor starts at the cursor in its own index', async () => {
    const first = await auditEventListRepository.page(
      db.knex,
      parseAuditEventList({ filter: 'identityId = "identity-42"' }),
    );
    const last = first.rows.at(-1)!;
    const [plan] = await plansOf({
      filter: 'identityId = "identity-42"',
      cursor: encodeTrailCursor(last),
    });
    const scan = plan!.nodes.find((n) => n['Index Name'] === 'audit_events__identity_id_tx_id_index');
    expect(scan).toBeDefined();
  });
});
