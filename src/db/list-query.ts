import type { Knex } from 'knex';

/**
 * A parsed list query (`src/schemas/list-query.ts` builds it from the request), and how a
 * repository applies it. Column names come from the schema's field map, never from the request;
 * user text reaches SQL only as bound values.
 */

export interface SortKey {
  column: string;
  direction: 'asc' | 'desc';
}

export type FilterClause = {
  column: string;
  op: '=' | '!=' | 'contains' | '<' | '<=' | '>' | '>=';
  value: string | boolean | number | null;
};

export interface ListQuery {
  limit: number;
  offset: number;
  sort: SortKey[];
  filter: FilterClause[];
}

/** Where a page sits in the whole list; the API sends it as `meta.pagination`. */
export interface Pagination {
  limit: number;
  offset: number;
  totalCount: number;
}

/** The one shape of every list a service returns. */
export interface ListPage<T> {
  items: T[];
  pagination: Pagination;
}

/** The same page with each item turned into `f(item)`. */
export async function mapPage<T, U>(
  page: ListPage<T>,
  f: (items: T[]) => U[] | Promise<U[]>,
): Promise<ListPage<U>> {
  return { items: await f(page.items), pagination: page.pagination };
}

/** `contains` is literal: LIKE wildcards in the user's value are escaped. */
function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, '\\$&');
}

function applyClause(qb: Knex.QueryBuilder, c: FilterClause): void {
  if (c.op === 'contains') {
    qb.whereRaw('?? ilike ? escape ?', [c.column, `%${escapeLike(String(c.value))}%`, '\\']);
  } else if (c.op !== '=' && c.op !== '!=') {
    // A range: the parser allows it on date-time columns only, with a checked RFC 3339 value.
    qb.whereRaw(`?? ${c.op} cast(? as timestamptz)`, [c.column, c.value]);
  } else if (c.value === null) {
    if (c.op === '=') qb.whereNull(c.column);
    else qb.whereNotNull(c.column);
  } else {
    // "!=" keeps rows whose column is NULL, as a client reading `externalId != "x"` expects.
    const operator = c.op === '=' ? '=' : 'is distinct from';
    // numeric: an integer column compared with 1.5 or 1e30 must not fail to cast into a 500.
    const param = typeof c.value === 'number' ? 'cast(? as numeric)' : '?';
    qb.whereRaw(`?? ${operator} ${param}`, [c.column, c.value]);
  }
}

/**
 * Returns the page query (filtered, sorted, limited; the caller may add a tiebreak orderBy) and
 * the count query (filtered only). `qb` is left untouched; it should be a plain select.
 */
export function applyListQuery(
  qb: Knex.QueryBuilder,
  q: ListQuery,
): { page: Knex.QueryBuilder; count: Knex.QueryBuilder } {
  const filtered = qb.clone();
  for (const clause of q.filter) applyClause(filtered, clause);
  const count = filtered.clone().clearSelect().clearOrder().count({ count: '*' });
  const page = filtered;
  for (const key of q.sort) page.orderBy(key.column, key.direction);
  page.limit(q.limit).offset(q.offset);
  return { page, count };
}

/**
 * Runs both queries; `tiebreak` (e.g. the id column) makes pages stable when sort keys repeat.
 * `countAll`, when given, is the exact number of rows of an unfiltered list read without scanning
 * them (see `countedRows`): `count(*)` over a large table costs time in proportion to the table.
 */
export async function runListQuery<Row = Record<string, unknown>>(
  qb: Knex.QueryBuilder,
  q: ListQuery,
  tiebreak?: string,
  countAll?: () => Promise<number>,
): Promise<ListPage<Row>> {
  const { page, count } = applyListQuery(qb, q);
  if (tiebreak !== undefined) page.orderBy(tiebreak, 'asc');
  // Sequential, not Promise.all: inside a transaction both share one connection anyway.
  const rows = (await page) as Row[];
  const totalCount =
    countAll !== undefined && q.filter.length === 0
      ? await countAll()
      : Number(((await count) as { count: string | number }[])[0]?.count ?? 0);
  return { items: rows, pagination: { limit: q.limit, offset: q.offset, totalCount } };
}

/**
 * The row count of a table kept by triggers in `table_row_counts`
 * (migrations/009_identity_list_indexes.ts); exact within the caller's transaction.
 */
export async function countedRows(db: Knex | Knex.Transaction, table: string): Promise<number> {
  const row = (await db('table_row_counts').where({ table_name: table }).first('row_count')) as
    { row_count: string | number } | undefined;
  if (row === undefined) throw new Error(`no row count kept for table ${table}`);
  return Number(row.row_count);
}
