/*
 * Reads of the stored audit trail in `(tx, id)` order, only rows whose transaction is below the
 * oldest still running (docs/adr/0015-audit-events-and-webhooks.md): every transaction below that
 * bound has ended, so no row can still appear at a position a reader has passed. Each read is one
 * statement whose bound (`head`) comes from its own snapshot, so rows and bound agree.
 */
import type { Knex } from 'knex';
import type { Db } from '../db/create-database.js';
import { applyListQuery, type FilterClause } from '../db/list-query.js';
import type { TrailPosition, TrailQuery } from '../db/trail-query.js';
import { AUDIT_EVENT_COLUMNS, type AuditEventRow } from './audit-event-row.js';

/** A page of rows and the head of the trail as the same snapshot saw it. */
export interface TrailRows {
  rows: AuditEventRow[];
  /** The oldest transaction still running: every row below it was readable. */
  head: string;
}

const HEAD = 'pg_snapshot_xmin(pg_current_snapshot())';

/**
 * Rows a page with a time range reads in trail order before it reads the whole range instead.
 * The planner assumes a range's rows are spread evenly over the trail; they are not (time and
 * trail order go together), so for a range far from where the page starts it would walk the
 * `(tx, id)` index over every row in between.
 */
export const PROBE_ROWS = 5_000;

/**
 * How a page is read: `ordered` walks an index in trail order and stops after the page (the
 * planner picks the index); `probe` walks at most PROBE_ROWS rows in trail order and filters
 * their times; `range` reads every row of the filters (the time range by its index) and sorts.
 * A probe that fills the page is exact: the rows it did not walk all come after the page.
 */
type Plan = 'ordered' | 'probe' | 'range';

type PageRow = AuditEventRow & { head: string; id: string | null };

/** A page as the statements see it: a direction, where it starts (exclusive), its size and filters. */
interface Read {
  dir: 'asc' | 'desc';
  from?: TrailPosition;
  limit: number;
  filter: FilterClause[];
}

async function readHead(db: Db): Promise<string> {
  const { rows } = (await db.raw(`select ${HEAD}::text as head`)) as { rows: { head: string }[] };
  return rows[0]!.head;
}

const isTime = (c: FilterClause) => c.column === 'occurred_at';

/** `qb` (left untouched) with the clauses of `filter`. */
function where(qb: Knex.QueryBuilder, filter: FilterClause[]): Knex.QueryBuilder {
  return applyListQuery(qb, { limit: 1, offset: 0, sort: [], filter }).page.clear('limit');
}

/**
 * The statement of one plan: the bound (one row), the page's keys joined laterally (so that an
 * empty page still reports the bound), then the page's rows by id. Plans handle keys only
 * (`order_tx`, `order_id`): columns are read and converted for the page's rows alone.
 */
function statement(db: Db, q: Read, plan: Plan) {
  const { dir, from } = q;
  const trailOrder = `audit_events.tx ${dir}, audit_events.id ${dir}`;
  const keyOrder = `order_tx ${dir}, order_id ${dir}`;
  const keys = db('audit_events')
    .select(db.raw('audit_events.tx as order_tx, audit_events.id as order_id'))
    .whereRaw('audit_events.tx < bound.head');
  if (from !== undefined) {
    keys.whereRaw(`(audit_events.tx, audit_events.id) ${dir === 'desc' ? '<' : '>'} (?::xid8, ?::bigint)`, [
      from.tx,
      from.id,
    ]);
  }
  let page: Knex.QueryBuilder;
  if (plan === 'ordered') {
    page = where(keys, q.filter).orderByRaw(trailOrder).limit(q.limit);
  } else if (plan === 'probe') {
    const others = q.filter.filter((c) => !isTime(c));
    const scanned = where(keys.clone().select('audit_events.occurred_at'), others)
      .orderByRaw(trailOrder)
      .limit(PROBE_ROWS);
    page = where(db.select('order_tx', 'order_id').from(scanned.as('scanned')), q.filter.filter(isTime))
      .orderByRaw(keyOrder)
      .limit(q.limit);
  } else {
    // OFFSET 0 keeps the subquery whole: the planner plans it for every row of the filters.
    const all = where(keys, q.filter).toSQL();
    page = db
      .select('*')
      .from(db.raw(`(${all.sql} offset 0) as candidates`, all.bindings))
      .orderByRaw(keyOrder)
      .limit(q.limit);
  }
  const { sql, bindings } = page.toSQL();
  // The page's rows one by one by primary key: LIMIT keeps the lookup a subquery of its own, so the
  // planner cannot turn it into a join that reads the table.
  return db.raw(
    `select bound.head::text as head, event.*
       from (select ${HEAD} as head) as bound
       left join lateral (${sql}) as page on true
       left join lateral (select ${AUDIT_EVENT_COLUMNS} from audit_events
                          where audit_events.id = page.order_id limit 1) as event on true
       order by page.${keyOrder.replace(', ', ', page.')}`,
    bindings,
  );
}

async function run(db: Db, q: Read, plan: Plan) {
  const { rows } = (await statement(db, q, plan)) as { rows: PageRow[] };
  const page = rows.filter((r) => r.id !== null);
  return {
    head: rows[0]!.head,
    rows: page.map(({ head: _head, ...row }) => row),
    full: page.length === q.limit,
  };
}

export const auditEventListRepository = {
  /**
   * One page of `q` in the order it asks for. With a time range, first a probe of the rows next
   * to where the page starts (the common case: a recent range, where most rows match); when that
   * does not fill the page, the whole range, read by its index and sorted.
   */
  async page(db: Db, q: TrailQuery): Promise<TrailRows> {
    const from = q.order === 'newest-first' ? q.before : q.after;
    if (from === 'now') return { rows: [], head: await readHead(db) };
    const query: Read = {
      dir: q.order === 'newest-first' ? 'desc' : 'asc',
      from,
      limit: q.limit,
      filter: q.filter,
    };
    if (!query.filter.some(isTime)) return run(db, query, 'ordered');
    const probe = await run(db, query, 'probe');
    return probe.full ? probe : run(db, query, 'range');
  },
};
