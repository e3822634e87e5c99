import { resolve } from 'node:path';
import { ApiError } from './api-client.js';
import { CliError, UsageError } from './cli-error.js';
import { out, outputWidth } from './cli-io.js';
import { stringOption, type CommandContext, type CommandSpec } from './command-spec.js';
import { readImportRows, type ImportRow } from './import-file.js';
import { progressBar } from './progress-bar.js';
import { withSessionApi } from './session-client.js';
import { formatTable } from './table.js';

const IDENTITIES = '/edge/management/v1/identities';
const DEFAULT_BATCH = 20;
const MAX_BATCH = 100;
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

export interface RowFailure {
  row: number;
  name: string;
  code: string;
  message: string;
}

interface Created {
  row: number;
  name: string;
  id: string;
  isAdmin: boolean;
}

class RowError extends Error {}

const text = (v: unknown) =>
  v === undefined || v === null ? '' : typeof v === 'string' ? v.trim() : String(v);

function booleanOf(v: unknown, column: string): boolean {
  if (typeof v === 'boolean') return v;
  const t = text(v).toLowerCase();
  if (t === '') return false;
  if (t in BOOLEANS) return BOOLEANS[t]!;
  throw new RowError(`${column} must be true or false`);
}

function enrollmentOf(values: ImportRow['values']) {
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

/** A list column: a JSON array, or text separated by `,` or `;`. */
function listOf(v: unknown): string[] | undefined {
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
export function createBodyOf({ values }: ImportRow) {
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
    roleAttributes: listOf(values.roleAttributes),
    permissions: listOf(values.permissions),
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

/** A row that asks for an admin; a row whose isAdmin is no boolean fails later, as INVALID_ROW. */
function isAdminRow({ values }: ImportRow): boolean {
  try {
    return booleanOf(values.isAdmin, 'isAdmin');
  } catch {
    return false;
  }
}

/** How many admin rows a refusal names: enough to find them, few enough for one line. */
const NAMED_ADMIN_ROWS = 5;
/** A name as a message shows it: a CSV field may be 65,536 characters long. */
const clip = (name: string) => (name.length > 64 ? `${name.slice(0, 64)}…` : name);
const rowAndName = (row: number, name: string) => `${row} (${clip(name)})`;

/**
 * An admin may do anything to every identity, so a file does not make one unless the command line
 * says so: an isAdmin column is easily carried over from an export or slipped into a shared file.
 */
function refuseAdminRows(path: string, rows: ImportRow[], allowed: boolean): void {
  const admins = rows.filter(isAdminRow);
  if (allowed || admins.length === 0) return;
  const named = admins.slice(0, NAMED_ADMIN_ROWS).map((r) => rowAndName(r.row, text(r.values.name)));
  const more = admins.length - named.length;
  throw new UsageError(
    `${path}: ${admins.length === 1 ? 'row' : 'rows'} ${named.join(', ')}${more > 0 ? ` and ${more} more` : ''} ` +
      `would create ${admins.length === 1 ? 'an admin' : 'admins'} (isAdmin true): ` +
      'nothing was imported; give --allow-admins to import them',
  );
}

/**
 * Permissions (token introspection, …) let an identity see into other identities' tokens: like
 * admins, a file grants none unless the command line says so.
 */
function refusePermissionRows(path: string, rows: ImportRow[], allowed: boolean): void {
  const granting = rows.filter(({ values }) => (listOf(values.permissions) ?? []).length > 0);
  if (allowed || granting.length === 0) return;
  const named = granting.slice(0, NAMED_ADMIN_ROWS).map((r) => rowAndName(r.row, text(r.values.name)));
  const more = granting.length - named.length;
  throw new UsageError(
    `${path}: ${granting.length === 1 ? 'row' : 'rows'} ${named.join(', ')}${more > 0 ? ` and ${more} more` : ''} ` +
      'would grant permissions: nothing was imported; give --allow-permissions to import them',
  );
}

/** The report: on stdout, as text or (--json) as one JSON document; rows in file order. */
function printReport(
  ctx: CommandContext,
  path: string,
  total: number,
  created: Created[],
  failed: RowFailure[],
) {
  const pick = ({ row, name, id }: Created) => ({ row, name, id });
  const admins = created.filter((c) => c.isAdmin).map(pick);
  if (ctx.json) {
    out(ctx.io, JSON.stringify({ total, created: created.map(pick), admins, failed }, null, 2));
    return;
  }
  out(ctx.io, `Imported ${created.length} of ${total} identities from ${path}`);
  if (admins.length > 0) {
    const list = admins.map((a) => rowAndName(a.row, a.name)).join(', ');
    out(ctx.io, `Admins created (${admins.length}), by row: ${list}`);
  }
  if (failed.length > 0) {
    const table = failed.map((f) => [String(f.row), f.name, f.code, f.message]);
    out(ctx.io, formatTable(['ROW', 'NAME', 'CODE', 'MESSAGE'], table, { width: outputWidth(ctx.io) }));
  }
}

async function importIdentities(ctx: CommandContext): Promise<void> {
  const path = resolve(ctx.io.cwd, ctx.positionals[0]!);
  const batchSize = batchSizeOf(ctx);
  const rows = readImportRows(path);
  refuseAdminRows(path, rows, ctx.values['allow-admins'] === true);
  refusePermissionRows(path, rows, ctx.values['allow-permissions'] === true);
  const created: Created[] = [];
  const failed: RowFailure[] = [];
  await withSessionApi(ctx.io, async (api) => {
    const bar = progressBar(ctx.io.stderr, rows.length, 'importing identities');
    let done = 0;
    const importRow = async (row: ImportRow) => {
      const name = text(row.values.name);
      try {
        const body = createBodyOf(row);
        const { data } = await api.post<{ id: string }>(IDENTITIES, { body });
        created.push({ row: row.row, name, id: data.id, isAdmin: body.isAdmin });
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
  printReport(ctx, path, rows.length, created, failed);
  if (failed.length > 0) throw new CliError(`${failed.length} of ${rows.length} rows failed`);
}

export const importCommands: CommandSpec[] = [
  {
    words: ['edge', 'import', 'identities'],
    args: '<file.csv|file.json>',
    summary: 'create identities from a CSV or JSON file, reporting each row that failed',
    options: {
      'batch-size': { type: 'string' },
      'allow-admins': { type: 'boolean' },
      'allow-permissions': { type: 'boolean' },
    },
    optionHelp: [
      ['--batch-size <n>', `parallel requests per batch (default ${DEFAULT_BATCH}, at most ${MAX_BATCH})`],
      ['--allow-admins', 'create the rows whose isAdmin is true; without it such a file is refused'],
      ['--allow-permissions', 'create the rows that grant permissions; without it such a file is refused'],
    ],
    positionals: { min: 1, max: 1 },
    run: importIdentities,
  },
];
