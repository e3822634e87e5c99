import type { FilterClause } from '../db/list-query.js';
import { validationError, type AppError } from '../errors/app-error.js';

/**
 * The `filter` language of list queries (described to clients by the `filter` parameter of the
 * OpenAPI documents, src/openapi/components.ts, and in docs/cli.md): clauses `field op value`
 * joined by `and`, parsed by a hand-written tokenizer in one linear pass. `=`, `!=` on every
 * type, `contains` on strings, `<`, `<=`, `>`, `>=` on date-times.
 */

export type FieldType = 'string' | 'boolean' | 'number' | 'datetime';

/** API field name -> SQL column. `sortable` defaults to true. */
export interface ListFields {
  [apiField: string]: { column: string; type: FieldType; sortable?: boolean };
}

export function lookupField(fields: ListFields, name: string) {
  // hasOwn: names such as "constructor" or "__proto__" must not resolve through the prototype.
  return Object.hasOwn(fields, name) ? fields[name] : undefined;
}

/** Shortens echoed user text so an error message never carries the whole hostile input. */
export function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

// ---- filter tokenizer ----

type Token =
  | { kind: 'word'; text: string; pos: number }
  | { kind: 'string'; value: string; pos: number }
  | { kind: 'number'; value: number; pos: number }
  | { kind: 'op'; text: '=' | '!=' | RangeOp; pos: number }
  | { kind: 'end'; pos: number };

type Read = [Token, number];

type RangeOp = '<' | '<=' | '>' | '>=';
const isRangeOp = (op: string): op is RangeOp => op === '<' || op === '<=' || op === '>' || op === '>=';

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
  if (c === '<' || c === '>') {
    const op = text[i + 1] === '=' ? (`${c}=` as const) : c;
    return [{ kind: 'op', text: op, pos: i }, i + op.length];
  }
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

export function parseFilter(text: string, fields: ListFields): FilterClause[] {
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
  throw filterError(`expected =, !=, <, <=, >, >= or contains, found ${describe(t)}`, t.pos);
}

function readValue(t: Token): Value {
  if (t.kind === 'string' || t.kind === 'number') return t.value;
  if (isKeyword(t, 'true')) return true;
  if (isKeyword(t, 'false')) return false;
  if (isKeyword(t, 'null')) return null;
  throw filterError(`expected a quoted string, number, true, false or null, found ${describe(t)}`, t.pos);
}

const DATETIME_EXAMPLE = 'a date-time such as "2024-01-31T12:00:00Z"';

/** What each field type accepts after `=` / `!=`, and the reason given when it does not. */
const ACCEPTS: Record<FieldType, [(value: Value) => boolean, string]> = {
  boolean: [(v) => typeof v === 'boolean', 'accepts only true or false'],
  string: [(v) => v === null || typeof v === 'string', 'accepts only a string or null'],
  number: [(v) => v === null || typeof v === 'number', 'accepts only a number or null'],
  datetime: [
    (v) => v === null || (typeof v === 'string' && isIsoDatetime(v)),
    `accepts only null or ${DATETIME_EXAMPLE}`,
  ],
};

function checkClause(name: string, type: FieldType, op: Op, value: Value, pos: number): void {
  const fail = (reason: string) => filterError(`field ${quote(name)} ${reason}`, pos);
  if (op === 'contains' && type !== 'string') throw fail('does not support contains');
  if (op === 'contains' && typeof value !== 'string') throw fail('needs a quoted string after contains');
  // Ranges only on instants: an order of strings would be the database's collation, not the client's.
  if (isRangeOp(op)) {
    if (type !== 'datetime') throw fail(`does not support ${op} (only date-time fields do)`);
    if (typeof value !== 'string' || !isIsoDatetime(value))
      throw fail(`needs ${DATETIME_EXAMPLE} after ${op}`);
    return;
  }
  const [accepts, reason] = ACCEPTS[type];
  if (!accepts(value)) throw fail(reason);
}

/** RFC 3339 `date-time` (its `T` and `Z` in either case), with at most microseconds as PostgreSQL keeps them. */
const ISO_DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?(?:[Zz]|[+-](\d{2}):(\d{2}))$/;

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
