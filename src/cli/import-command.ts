import { readFileSync, statSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { ApiError } from './api-client.js';
import { CliError, UsageError } from './cli-error.js';
import { out, outputWidth } from './cli-io.js';
import { stringOption, type CommandContext, type CommandSpec } from './command-spec.js';
import { countJsonArrayItems, JsonLimitError } from './count-json-array-items.js';
import { CsvLimitError, parseCsv } from './csv.js';
import { progressBar } from './progress-bar.js';
import { withSessionApi } from './session-client.js';
import { formatTable } from './table.js';

const IDENTITIES = '/edge/management/v1/identities';
const DEFAULT_BATCH = 20;
const MAX_BATCH = 100;
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
 * arrays of scalars (3), as roleAttributes.
 */
export const MAX_JSON_DEPTH = 3;
/** The columns (CSV header) or keys (JSON objects) of a row; docs/cli.md explains each. */
const COLUMNS = [
  'name',
  'type',
  'isAdmin',
  'updb',
  'ottca',
  'enrollment',
  'externalId',
  'authPolicyId',
  'roleAttributes',
] as const;
type Column = (typeof COLUMNS)[number];
const TYPES: Record<string, string> = {
  device: 'Device',
  service: 'Service',
  user: 'User',
  default: 'Default',
};
const BOOLEANS: Record<string, boolean> = {
  true: true,
  yes: true,
  '1': true,
  false: false,
  no: false,
  '0': false,
};

/** One row of the file: where it is (CSV line or JSON position), and its values. */
interface Row {
  row: number;
  values: Partial<Record<Column, unknown>>;
}

export interface RowFailure {
  row: number;
  name: string;
  code: string;
  message: string;
}

class RowError extends Error {}

function readRows(path: string): Row[] {
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

function csvRows(path: string, text: string): Row[] {
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

function jsonRows(path: string, text: string): Row[] {
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
    values: typeof item === 'object' && item !== null && !Array.isArray(item) ? (item as Row['values']) : {},
  }));
}

const text = (v: unknown) =>
  v === undefined || v === null ? '' : typeof v === 'string' ? v.trim() : String(v);

function booleanOf(v: unknown, column: string): boolean {
  if (typeof v === 'boolean') return v;
  const t = text(v).toLowerCase();
  if (t === '') return false;
  if (t in BOOLEANS) return BOOLEANS[t]!;
  throw new RowError(`${column} must be true or false`);
}

function enrollmentOf(values: Row['values']) {
  const updb = text(values.updb);
  const ottca = text(values.ottca);
  const kind = text(values.enrollment).toLowerCase();
  const chosen = [updb !== '', ottca !== '', kind === 'none'].filter(Boolean).length;
  if (chosen > 1) throw new RowError('give at most one of updb, ottca and enrollment none');
  if (kind !== '' && !['ott', 'none', 'updb', 'ottca'].includes(kind)) {
    throw new RowError('enrollment must be ott or none (or give updb / ottca)');
  }
  if (updb !== '') return { updb };
  if (ottca !== '') return { ottca };
  if (kind === 'updb' || kind === 'ottca') throw new RowError(`enrollment ${kind} needs the ${kind} column`);
  // As `svc edge create identity`: an ott enrollment unless told otherwise.
  return kind === 'none' ? undefined : { ott: true };
}

function rolesOf(v: unknown): string[] | undefined {
  if (Array.isArray(v)) return v.map(text).filter(Boolean);
  const t = text(v);
  return t === ''
    ? undefined
    : t
        .split(/[;,]/)
        .map((r) => r.trim())
        .filter(Boolean);
}

/** The create body of a row; a row that cannot make one fails here, without a request. */
export function createBodyOf({ values }: Row) {
  const name = text(values.name);
  if (name === '') throw new RowError('name is empty');
  const typeWord = text(values.type).toLowerCase();
  const type = typeWord === '' ? undefined : TYPES[typeWord];
  if (typeWord !== '' && !type)
    throw new RowError(`unknown type "${text(values.type)}": use device, service or user`);
  return {
    name,
    type,
    isAdmin: booleanOf(values.isAdmin, 'isAdmin'),
    enrollment: enrollmentOf(values),
    externalId: text(values.externalId) || undefined,
    authPolicyId: text(values.authPolicyId) || undefined,
    roleAttributes: rolesOf(values.roleAttributes),
  };
}

function batchSizeOf(ctx: CommandContext): number {
  const raw = stringOption(ctx.values, 'batch-size');
  if (raw === undefined) return DEFAULT_BATCH;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_BATCH) {
    throw new UsageError(`--batch-size must be a whole number from 1 to ${MAX_BATCH}`);
  }
  return n;
}

async function importIdentities(ctx: CommandContext): Promise<void> {
  const path = resolve(ctx.io.cwd, ctx.positionals[0]!);
  const batchSize = batchSizeOf(ctx);
  const rows = readRows(path);
  const created: { row: number; name: string; id: string }[] = [];
  const failed: RowFailure[] = [];
  await withSessionApi(ctx.io, async (api) => {
    const bar = progressBar(ctx.io.stderr, rows.length, 'importing identities');
    let done = 0;
    const importRow = async (row: Row) => {
      const name = text(row.values.name);
      try {
        const { data } = await api.post<{ id: string }>(IDENTITIES, { body: createBodyOf(row) });
        created.push({ row: row.row, name, id: data.id });
      } catch (err) {
        if (err instanceof RowError)
          failed.push({ row: row.row, name, code: 'INVALID_ROW', message: err.message });
        else if (err instanceof ApiError)
          failed.push({ row: row.row, name, code: err.code, message: err.apiMessage });
        // The session ended or the server is gone: no later row can succeed either.
        else throw err;
      }
      bar.update(++done, failed.length);
    };
    try {
      // One batch of parallel requests at a time: steady load on the controller, bounded memory.
      for (let i = 0; i < rows.length; i += batchSize) {
        await Promise.all(rows.slice(i, i + batchSize).map(importRow));
      }
    } finally {
      bar.finish();
    }
  });
  const byRow = (a: { row: number }, b: { row: number }) => a.row - b.row;
  created.sort(byRow);
  failed.sort(byRow);
  if (ctx.json) {
    out(ctx.io, JSON.stringify({ total: rows.length, created, failed }, null, 2));
  } else {
    out(ctx.io, `Imported ${created.length} of ${rows.length} identities from ${path}`);
    if (failed.length > 0) {
      const table = failed.map((f) => [String(f.row), f.name, f.code, f.message]);
      out(ctx.io, formatTable(['ROW', 'NAME', 'CODE', 'MESSAGE'], table, { width: outputWidth(ctx.io) }));
    }
  }
  if (failed.length > 0) throw new CliError(`${failed.length} of ${rows.length} rows failed`);
}

export const importCommands: CommandSpec[] = [
  {
    words: ['edge', 'import', 'identities'],
    args: '<file.csv|file.json>',
    summary: 'create identities from a CSV or JSON file, reporting each row that failed',
    options: { 'batch-size': { type: 'string' } },
    optionHelp: [
      ['--batch-size <n>', `parallel requests per batch (default ${DEFAULT_BATCH}, at most ${MAX_BATCH})`],
    ],
    positionals: { min: 1, max: 1 },
    run: importIdentities,
  },
];
