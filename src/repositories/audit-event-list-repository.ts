import type { Db } from '../db/create-database.js';
import { applyListQuery } from '../db/list-query.js';
import { comparePositions, type TrailQuery } from '../db/trail-query.js';
import { AUDIT_EVENT_COLUMNS, type AuditEventRow } from './audit-event-row.js';

/**
 * Reads of the stored audit trail (migrations/022_audit_events.ts) in `(tx, id)` order, only rows
 * whose transaction is below the oldest still running (docs/adr/0015-audit-events-and-webhooks.md):
 * every transaction below that bound has ended, so no row can still appear at a position a reader
 * has passed. Each read is one statement; its bound (`head`) comes from that statement's own
 * snapshot, so rows and bound agree.
 */

/** A page of rows and the head of the trail as the same snapshot saw it. */
export interface TrailRows {
  rows: AuditEventRow[];
  /** The oldest transaction still running: every row below it was readable. */
  head: string;
}

const HEAD = 'pg_snapshot_xmin(pg_current_snapshot())';

async function readHead(db: Db): Promise<string> {
  const { rows } = (await db.raw(`select ${HEAD}::text as head`)) as { rows: { head: string }[] };
  return rows[0]!.head;
}

export const auditEventListRepository = {
  /**
   * One page of `q` in the order it asks for. The statement is the bound (one row) with the page
   * joined laterally, so that an empty page still reports the bound. Columns are qualified by
   * table: `tx` and `id` are also the text aliases of the select list, and ordering by those
   * would order text.
   */
  async page(db: Db, q: TrailQuery): Promise<TrailRows> {
    const from = q.order === 'newest-first' ? q.before : q.after;
    if (from === 'now') return { rows: [], head: await readHead(db) };
    const direction = q.order === 'newest-first' ? 'desc' : 'asc';
    const inner = applyListQuery(
      db('audit_events').select(db.raw(AUDIT_EVENT_COLUMNS)).whereRaw('audit_events.tx < bound.head'),
      { limit: q.limit, offset: 0, sort: [], filter: q.filter },
    ).page;
    if (from !== undefined) {
      inner.whereRaw(
        `(audit_events.tx, audit_events.id) ${direction === 'desc' ? '<' : '>'} (?::xid8, ?::bigint)`,
        [from.tx, from.id],
      );
    }
    inner.orderByRaw(`audit_events.tx ${direction}, audit_events.id ${direction}`);
    const { sql, bindings } = inner.toSQL();
    const { rows } = (await db.raw(
      `select bound.head::text as head, page.* from (select ${HEAD} as head) as bound
         left join lateral (${sql}) as page on true`,
      bindings,
    )) as { rows: (AuditEventRow & { head: string; id: string | null })[] };
    const head = rows[0]!.head;
    const found = rows.filter((r) => r.id !== null).map(({ head: _head, ...row }) => row as AuditEventRow);
    // The statement's order is the page's; SQL promises it only with an outer ORDER BY.
    found.sort((a, b) => (direction === 'asc' ? 1 : -1) * comparePositions(a, b));
    return { rows: found, head };
  },

  /** The head of the trail now: the oldest transaction still running. */
  head: readHead,
};
