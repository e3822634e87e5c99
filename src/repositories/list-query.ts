import type { Knex } from 'knex';
import { validationError } from '../errors/app-error.js';
import { lookupField, parseFilter, quote } from './list-filter.js';

/**
 * List queries of the Edge management API (decisions.md §2): `limit`, `offset`, `sort` and a small
 * `filter` language. User text reaches SQL only as bound values; column names come from the
 * caller's field map, never from the request.
 */

export type FieldType = 'string' | 'boolean' | 'number' | 'datetime';

/** API field name -> SQL column. `sortable` defaults to true. */
export interface ListFields {
  [apiField: string]: { column: string; type: FieldType; sortable?: boolean };
}

export interface SortKey {
  column: string;
  direction: 'asc' | 'desc';
}

export type FilterClause = {
  column: string;
  op: '=' | '!=' | 'contains';
  value: string | boolean | number | null;
};

export interface ListQuery {
  limit: number;
  offset: number;
  sort: SortKey[];
  filter: FilterClause[];
}

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 500;
/** Bounds the work a hostile query string can cause; real filters are far shorter. */
export const MAX_PARAM_BYTES = 4096;

/** Parses `ctx.query`; every bad value is a COULD_NOT_VALIDATE naming its parameter. */
export function parseListQuery(
  query: Record<string, unknown>,
  fields: ListFields,
  defaultSort?: string,
): ListQuery {
  return {
    limit:
      parseInteger(query, 'limit', 1, MAX_LIMIT, `must be an integer from 1 to ${MAX_LIMIT}`) ??
      DEFAULT_LIMIT,
    offset: parseInteger(query, 'offset', 0, Number.MAX_SAFE_INTEGER, 'must be a non-negative integer') ?? 0,
    sort: parseSortParam(query, fields, defaultSort),
    filter: parseFilter(singleValue(query, 'filter') ?? '', fields),
  };
}

/** Koa gives string[] for repeated parameters; which one was meant is unknowable, so refuse. */
function singleValue(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw validationError(name, 'must be given once');
  if (Buffer.byteLength(value, 'utf8') > MAX_PARAM_BYTES) {
    throw validationError(name, `must be at most ${MAX_PARAM_BYTES} bytes long`);
  }
  return value;
}

function parseInteger(
  query: Record<string, unknown>,
  name: string,
  min: number,
  max: number,
  reason: string,
) {
  const text = singleValue(query, name);
  if (text === undefined) return undefined;
  if (!/^[0-9]{1,16}$/.test(text)) throw validationError(name, reason);
  const value = Number(text);
  if (value < min || value > max) throw validationError(name, reason);
  return value;
}

// ---- sort: "field [asc|desc], …" ----

function parseSortParam(query: Record<string, unknown>, fields: ListFields, defaultSort?: string) {
  const text = singleValue(query, 'sort');
  if (text !== undefined && text.trim() !== '') return parseSort(text, fields);
  if (defaultSort === undefined) return [];
  try {
    return parseSort(defaultSort, fields);
  } catch {
    // A bad default is our bug, not the client's: it must not surface as a 400.
    throw new Error(`invalid defaultSort ${quote(defaultSort)}`);
  }
}

function parseSort(text: string, fields: ListFields): SortKey[] {
  const seen = new Set<string>();
  return text.split(',').map((item, index) => parseSortItem(item, index + 1, fields, seen));
}

function parseSortItem(item: string, n: number, fields: ListFields, seen: Set<string>): SortKey {
  const [name = '', direction = 'asc', ...rest] = item.trim().split(/\s+/);
  if (name === '') throw validationError('sort', `item ${n} is empty`);
  if (rest.length > 0)
    throw validationError('sort', `item ${n} must be "field", "field asc" or "field desc"`);
  const field = lookupField(fields, name);
  if (!field) throw validationError('sort', `unknown field ${quote(name)} in item ${n}`);
  if (field.sortable === false) throw validationError('sort', `field ${quote(name)} is not sortable`);
  if (seen.has(name)) throw validationError('sort', `field ${quote(name)} is given twice`);
  seen.add(name);
  const dir = direction.toLowerCase();
  if (dir !== 'asc' && dir !== 'desc') {
    throw validationError('sort', `direction ${quote(direction)} in item ${n} must be asc or desc`);
  }
  return { column: field.column, direction: dir };
}

function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, '\\$&');
}

function applyClause(qb: Knex.QueryBuilder, c: FilterClause): void {
  if (c.op === 'contains') {
    qb.whereRaw('?? ilike ? escape ?', [c.column, `%${escapeLike(String(c.value))}%`, '\\']);
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

/** Runs both queries; `tiebreak` (e.g. the id column) makes pages stable when sort keys repeat. */
export async function runListQuery<Row = Record<string, unknown>>(
  qb: Knex.QueryBuilder,
  q: ListQuery,
  tiebreak?: string,
): Promise<{ rows: Row[]; totalCount: number }> {
  const { page, count } = applyListQuery(qb, q);
  if (tiebreak !== undefined) page.orderBy(tiebreak, 'asc');
  // Sequential, not Promise.all: inside a transaction both share one connection anyway.
  const rows = (await page) as Row[];
  const [counted] = (await count) as { count: string | number }[];
  return { rows, totalCount: Number(counted?.count ?? 0) };
}
