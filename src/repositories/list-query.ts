import type { Knex } from 'knex';
import { validationError, type AppError } from '../errors/app-error.js';

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

function lookupField(fields: ListFields, name: string) {
  // hasOwn: names such as "constructor" or "__proto__" must not resolve through the prototype.
  return Object.hasOwn(fields, name) ? fields[name] : undefined;
}

/** Shortens echoed user text so an error message never carries the whole hostile input. */
function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
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

// ---- filter tokenizer ----

type Token =
  | { kind: 'word'; text: string; pos: number }
  | { kind: 'string'; value: string; pos: number }
  | { kind: 'number'; value: number; pos: number }
  | { kind: 'op'; text: '=' | '!='; pos: number }
  | { kind: 'end'; pos: number };

type Read = [Token, number];

function filterError(reason: string, pos: number): AppError {
  return validationError('filter', `${reason} at character ${pos + 1}`);
}

const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';
const isWordStart = (c: string | undefined) => c !== undefined && /^[A-Za-z_]$/.test(c);
const isWordChar = (c: string | undefined) => isWordStart(c) || isDigit(c);
const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\n' || c === '\r';

/** One linear pass, no backtracking: cost is bounded by the 4 KiB input limit. */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    if (isSpace(text[i]!)) {
      i++;
      continue;
    }
    const [token, next] = readToken(text, i);
    tokens.push(token);
    i = next;
  }
  tokens.push({ kind: 'end', pos: text.length });
  return tokens;
}

function readToken(text: string, i: number): Read {
  const c = text[i];
  if (c === '"') return readString(text, i);
  if (c === '=') return [{ kind: 'op', text: '=', pos: i }, i + 1];
  if (c === '!' && text[i + 1] === '=') return [{ kind: 'op', text: '!=', pos: i }, i + 2];
  if (isDigit(c) || (c === '-' && isDigit(text[i + 1]))) return readNumber(text, i);
  if (isWordStart(c)) return readWord(text, i);
  throw filterError(`unexpected character ${quote(c ?? '')}`, i);
}

function readString(text: string, start: number): Read {
  let value = '';
  let i = start + 1;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') return [{ kind: 'string', value, pos: start }, i + 1];
    // PostgreSQL text cannot hold NUL; refusing it here keeps it from becoming a 500.
    if (c === '\0') throw filterError('NUL character in string', i);
    if (c === '\\') {
      const escaped = text[i + 1];
      if (escaped === undefined) break;
      if (escaped !== '"' && escaped !== '\\')
        throw filterError('unknown escape (only \\" and \\\\ are allowed)', i);
      value += escaped;
      i += 2;
      continue;
    }
    value += c;
    i++;
  }
  throw filterError('unterminated string starting', start);
}

function readNumber(text: string, start: number): Read {
  let i = start + 1;
  while (isDigit(text[i])) i++;
  if (text[i] === '.' && isDigit(text[i + 1])) {
    i += 2;
    while (isDigit(text[i])) i++;
  }
  if (isWordChar(text[i]) || text[i] === '.') throw filterError('malformed number', start);
  if (i - start > 32) throw filterError('number too long', start);
  return [{ kind: 'number', value: Number(text.slice(start, i)), pos: start }, i];
}

function readWord(text: string, start: number): Read {
  let i = start + 1;
  while (isWordChar(text[i])) i++;
  return [{ kind: 'word', text: text.slice(start, i), pos: start }, i];
}

// ---- filter parser: clause ("and" clause)* ; clause = field op value ----

type Op = FilterClause['op'];
type Value = FilterClause['value'];

const isKeyword = (t: Token, word: string) => t.kind === 'word' && t.text.toLowerCase() === word;

function describe(t: Token): string {
  if (t.kind === 'end') return 'the end of the filter';
  if (t.kind === 'string') return 'a string';
  if (t.kind === 'number') return 'a number';
  return quote(t.text);
}

function parseFilter(text: string, fields: ListFields): FilterClause[] {
  if (text.trim() === '') return [];
  const tokens = tokenize(text);
  const clauses: FilterClause[] = [];
  let i = 0;
  for (;;) {
    const [clause, next] = parseClause(tokens, i, fields);
    clauses.push(clause);
    const t = tokens[next]!;
    if (t.kind === 'end') return clauses;
    if (!isKeyword(t, 'and'))
      throw filterError(`expected "and" or the end of the filter, found ${describe(t)}`, t.pos);
    i = next + 1;
  }
}

function parseClause(tokens: Token[], i: number, fields: ListFields): [FilterClause, number] {
  const name = tokens[i]!;
  if (name.kind !== 'word') throw filterError(`expected a field name, found ${describe(name)}`, name.pos);
  const field = lookupField(fields, name.text);
  if (!field) throw filterError(`unknown field ${quote(name.text)}`, name.pos);
  const op = readOperator(tokens[i + 1]!);
  const valueToken = tokens[i + 2]!;
  const value = readValue(valueToken);
  checkClause(name.text, field.type, op, value, valueToken.pos);
  return [{ column: field.column, op, value }, i + 3];
}

function readOperator(t: Token): Op {
  if (t.kind === 'op') return t.text;
  if (isKeyword(t, 'contains')) return 'contains';
  throw filterError(`expected =, != or contains, found ${describe(t)}`, t.pos);
}

function readValue(t: Token): Value {
  if (t.kind === 'string' || t.kind === 'number') return t.value;
  if (isKeyword(t, 'true')) return true;
  if (isKeyword(t, 'false')) return false;
  if (isKeyword(t, 'null')) return null;
  throw filterError(`expected a quoted string, number, true, false or null, found ${describe(t)}`, t.pos);
}

/** What each field type accepts after `=` / `!=`, and the reason given when it does not. */
const ACCEPTS: Record<FieldType, [(value: Value) => boolean, string]> = {
  boolean: [(v) => typeof v === 'boolean', 'accepts only true or false'],
  string: [(v) => v === null || typeof v === 'string', 'accepts only a string or null'],
  number: [(v) => v === null || typeof v === 'number', 'accepts only a number or null'],
  datetime: [
    (v) => v === null || (typeof v === 'string' && isIsoDatetime(v)),
    'accepts only null or a date-time such as "2024-01-31T12:00:00Z"',
  ],
};

function checkClause(name: string, type: FieldType, op: Op, value: Value, pos: number): void {
  const fail = (reason: string) => filterError(`field ${quote(name)} ${reason}`, pos);
  if (op === 'contains' && type !== 'string') throw fail('does not support contains');
  if (op === 'contains' && typeof value !== 'string') throw fail('needs a quoted string after contains');
  const [accepts, reason] = ACCEPTS[type];
  if (!accepts(value)) throw fail(reason);
}

const ISO_DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?(?:Z|[+-](\d{2}):(\d{2}))$/;

/** Checked part by part so that PostgreSQL never sees a date it would reject with a 500. */
function isIsoDatetime(text: string): boolean {
  const match = ISO_DATETIME.exec(text);
  if (!match) return false;
  const [y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, oh = 0, om = 0] = match
    .slice(1)
    .map((p) => Number(p ?? 0));
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  const days = mo === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(mo) ? 30 : 31;
  const time = h <= 23 && mi <= 59 && s <= 59 && oh <= 14 && om <= 59;
  return y >= 1 && mo >= 1 && mo <= 12 && d >= 1 && d <= days && time;
}

// ---- applying to knex ----

/** `contains` is literal: LIKE wildcards in the user's value are escaped. */
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
