import type { ListQuery, SortKey } from '../db/list-query.js';
import { validationError } from '../errors/app-error.js';
import { lookupField, parseFilter, quote, type ListFields } from './list-filter.js';

/**
 * List queries of the Edge management API: `limit`, `offset`, `sort` and a small
 * `filter` language, parsed from the query string into a typed `ListQuery` before any service
 * sees them.
 */

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
export function singleValue(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw validationError(name, 'must be given once');
  if (Buffer.byteLength(value, 'utf8') > MAX_PARAM_BYTES) {
    throw validationError(name, `must be at most ${MAX_PARAM_BYTES} bytes long`);
  }
  return value;
}

export function parseInteger(
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

/** A parser of one resource's list queries: its field map and the order when no sort is given. */
export function listQueryParser(fields: ListFields, defaultSort: string) {
  return (query: Record<string, unknown>): ListQuery => parseListQuery(query, fields, defaultSort);
}

/**
 * Lists paged by cursor refuse `offset` and `sort` rather than ignore them: an offset would repeat
 * or skip rows added meanwhile, and their order is fixed.
 */
export function refuseOffsetAndSort(query: Record<string, unknown>, why: string): void {
  for (const name of ['offset', 'sort']) {
    if (query[name] !== undefined) throw validationError(name, why);
  }
}
