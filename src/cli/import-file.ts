import { readFileSync, statSync } from 'node:fs';
import { extname } from 'node:path';
import { CliError, UsageError } from './cli-error.js';
import { countJsonArrayItems, JsonLimitError } from './count-json-array-items.js';
import { CsvLimitError, parseCsv } from './csv.js';

/** Largest import file: far more than an import needs, small enough to read into memory whole. */
export const MAX_IMPORT_BYTES = 64 * 1024 * 1024;
/**
 * Most rows in an import file. The bytes alone do not bound the memory: each row becomes objects
 * many times the size of its text, so 64 MiB of one-character rows would exhaust the heap.
 */
export const MAX_IMPORT_ROWS = 1_000_000;
/**
 * Most values in an import file: the fields of its CSV records, header included, or in JSON its
 * rows, their values and the elements of their arrays. Ten values a row: more than rows that fit
 * 1,000,000 to 64 MiB can hold. The row limit alone let one row, or rows of empty fields, carry
 * tens of millions of values: 64 MiB of them took 0.8 to 1.4 GiB of heap; 10,000,000 of the
 * costliest kind (short distinct strings) take about 300 MiB of heap, 800 MB resident at the peak
 * of JSON.parse: the order of what 1,000,000 plain CSV rows take (600 MB).
 */
export const MAX_IMPORT_VALUES = 10 * MAX_IMPORT_ROWS;
/**
 * Deepest nesting in a JSON import file: the array (1) of rows (2), whose values are scalars or
 * arrays of scalars (3), as roleAttributes and permissions.
 */
export const MAX_JSON_DEPTH = 3;
/** The columns (CSV header) or keys (JSON objects) of a row; docs/cli.md explains each. */
export const COLUMNS = [
  'name',
  'type',
  'isAdmin',
  'updb',
  'ottca',
  'enrollment',
  'externalId',
  'authPolicyId',
  'roleAttributes',
  'permissions',
] as const;
export type Column = (typeof COLUMNS)[number];

/** One row of the file: where it is (CSV line or JSON position), and its values. */
export interface ImportRow {
  row: number;
  values: Partial<Record<Column, unknown>>;
}

/** The rows of a CSV or JSON import file (by its extension), or a CliError naming what is wrong. */
export function readImportRows(path: string): ImportRow[] {
  let text: string;
  try {
    const size = statSync(path).size;
    if (size > MAX_IMPORT_BYTES) {
      throw new CliError(
        `${path} is ${size} bytes; an import file may be at most ${MAX_IMPORT_BYTES} bytes (64 MiB): split it`,
      );
    }
    // A UTF-8 byte-order mark, as some editors write, is no part of the data.
    text = readFileSync(path, 'utf8').replace(/^\uFEFF/, '');
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(
      `cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  return extname(path).toLowerCase() === '.json' ? jsonRows(path, text) : csvRows(path, text);
}

const tooManyRows = (path: string) =>
  new CliError(`${path} has more than ${MAX_IMPORT_ROWS} rows, the most an import file may have: split it`);
const tooManyValues = (path: string, what: string) =>
  new CliError(
    `${path} has more than ${MAX_IMPORT_VALUES} ${what}, the most an import file may have: split it`,
  );
/** A column name as an error shows it: a name may be a whole field or JSON key, megabytes long. */
const clip = (name: string) => (name.length > 64 ? `${name.slice(0, 64)}…` : name);
const unknownColumns = (path: string, unknown: string[]) =>
  new UsageError(`${path}: unknown column ${unknown.map(clip).join(', ')}; known: ${COLUMNS.join(', ')}`);

function checkColumns(path: string, names: string[]): void {
  const unknown = names.filter((n) => !(COLUMNS as readonly string[]).includes(n));
  if (unknown.length > 0) throw unknownColumns(path, unknown);
  if (!names.includes('name')) throw new UsageError(`${path}: a "name" column is required`);
}

function csvRows(path: string, text: string): ImportRow[] {
  let records;
  try {
    records = parseCsv(text, MAX_IMPORT_ROWS + 1, MAX_IMPORT_VALUES); // the header and the rows
  } catch (err) {
    if (err instanceof CsvLimitError) {
      throw err.what === 'records' ? tooManyRows(path) : tooManyValues(path, 'fields');
    }
    throw new CliError(`${path}: ${(err as Error).message}`);
  }
  const [header, ...body] = records;
  if (!header) return [];
  const names = header.fields.map((f) => f.trim());
  checkColumns(path, names);
  return body.map((r) => ({
    row: r.line,
    values: Object.fromEntries(names.map((n, i) => [n, r.fields[i]?.trim() ?? ''])),
  }));
}

const JSON_LIMITS = {
  items: MAX_IMPORT_ROWS,
  values: MAX_IMPORT_VALUES,
  depth: MAX_JSON_DEPTH,
  keys: new Set<string>(COLUMNS),
};

/** Checks the file against JSON_LIMITS before JSON.parse builds any of it. */
function checkJsonLimits(path: string, text: string): void {
  try {
    countJsonArrayItems(text, JSON_LIMITS);
  } catch (err) {
    if (!(err instanceof JsonLimitError)) throw err;
    if (err.limit === 'items') throw tooManyRows(path);
    if (err.limit === 'values') {
      throw tooManyValues(path, 'values (rows, the values in them and the elements of their arrays)');
    }
    if (err.limit === 'key') throw unknownColumns(path, [err.key!]);
    if (err.item === 0) throw new CliError(`${path}: expected a JSON array of identities`);
    throw new CliError(
      `${path}: row ${err.item} nests too deep: a row is an object whose values are text, numbers, ` +
        'true, false, null or arrays of those',
    );
  }
}

function jsonRows(path: string, text: string): ImportRow[] {
  checkJsonLimits(path, text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new CliError(`${path}: not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw new CliError(`${path}: expected a JSON array of identities`);
  const keys = new Set<string>();
  for (const item of parsed) {
    if (typeof item === 'object' && item !== null && !Array.isArray(item))
      Object.keys(item).forEach((k) => keys.add(k));
  }
  checkColumns(path, keys.size === 0 ? ['name'] : [...keys]);
  return parsed.map((item, i) => ({
    row: i + 1,
    values:
      typeof item === 'object' && item !== null && !Array.isArray(item) ? (item as ImportRow['values']) : {},
  }));
}
