import { ApiError, UnreachableError, type ApiClient } from './api-client.js';
import { UsageError } from './cli-error.js';
import { note, out, outputWidth, type CliIo } from './cli-io.js';
import { stringOption, type CommandContext, type CommandSpec } from './command-spec.js';
import { withSessionApi } from './session-client.js';
import { truncate } from './table.js';
import { terminalText } from './terminal-text.js';

const AUDIT_EVENTS = '/edge/management/v1/audit-events';
/** The API's largest page. */
const PAGE = 500;
const DEFAULT_COUNT = 50;
const MAX_COUNT = 100_000;
const POLL_MS = 1000;

interface AuditEventLine {
  id: string;
  event: string;
  occurredAt: string;
  outcome?: string;
  identityId?: string;
  actorId?: string;
  sourceAddress?: string;
  requestId?: string;
  attempts: number;
  lastAt?: string;
  details: Record<string, unknown>;
}

interface Pagination {
  nextCursor: string | null;
  headCursor: string;
}

/** Fixed column widths, so that lines printed a poll apart line up under one header. */
const COLUMNS: [string, number][] = [
  ['OCCURRED AT', 24],
  ['EVENT', 26],
  ['OUTCOME', 7],
  ['IDENTITY', 16],
  ['ACTOR', 16],
  ['ADDRESS', 15],
  ['DETAILS', 0],
];

const shown = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** `attempts=3 lastAt=… method=password reason=wrong-password`: the fields without a column. */
function detailsText(e: AuditEventLine): string {
  const fields = {
    ...(e.attempts > 1 && { attempts: e.attempts, lastAt: e.lastAt }),
    ...e.details,
  };
  return Object.entries(fields)
    .map(([k, v]) => `${k}=${shown(v)}`)
    .join(' ');
}

function line(cells: string[], width: number | undefined): string {
  const text = cells
    .map((raw, i) => {
      const cell = terminalText(raw);
      const w = COLUMNS[i]![1];
      return i === cells.length - 1 ? cell : cell.padEnd(w);
    })
    .join('  ')
    .trimEnd();
  return width === undefined ? text : truncate(text, width);
}

const row = (e: AuditEventLine) => [
  e.occurredAt,
  e.event,
  e.outcome ?? '',
  e.identityId ?? '',
  e.actorId ?? '',
  e.sourceAddress ?? '',
  detailsText(e),
];

/** The newest `count` events matching `filter` (newest first), and the head the first read saw. */
async function newest(
  api: ApiClient,
  filter: string | undefined,
  count: number,
): Promise<{ events: AuditEventLine[]; head: string }> {
  const events: AuditEventLine[] = [];
  let cursor: string | undefined;
  let head: string | undefined;
  for (;;) {
    const limit = Math.min(PAGE, count - events.length);
    const { data, meta } = await api.get<AuditEventLine[]>(AUDIT_EVENTS, {
      query: { filter, limit, cursor },
    });
    const pagination = meta.pagination as Pagination;
    head ??= pagination.headCursor;
    events.push(...data);
    if (pagination.nextCursor === null || events.length >= count) return { events, head };
    cursor = pagination.nextCursor;
  }
}

function countOption(ctx: CommandContext): number {
  const text = stringOption(ctx.values, 'limit');
  if (text === undefined) return DEFAULT_COUNT;
  const n = Number(text);
  if (!/^[0-9]+$/.test(text) || n < 1 || n > MAX_COUNT)
    throw new UsageError(`--limit: a whole number from 1 to ${MAX_COUNT.toLocaleString('en')}`);
  return n;
}

/** A refusal worth waiting out while following: the controller is restarting or busy. */
const isTransient = (err: unknown) =>
  err instanceof UnreachableError || (err instanceof ApiError && [429, 502, 503, 504].includes(err.status));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `after=<cursor>` every second and prints what came, oldest first, until the process is
 * interrupted. Each poll reads the stored session again, so an OIDC session is refreshed before
 * its access token expires; a restarting controller is waited for.
 */
async function follow(
  io: CliIo,
  filter: string | undefined,
  from: string,
  print: (events: AuditEventLine[]) => void,
): Promise<never> {
  let cursor = from;
  let failing = false;
  for (;;) {
    try {
      const { data, meta } = await withSessionApi(io, (api) =>
        api.get<AuditEventLine[]>(AUDIT_EVENTS, { query: { filter, after: cursor, limit: PAGE } }),
      );
      if (failing) note(io, 'svc: following again');
      failing = false;
      print(data);
      cursor = (meta.pagination as Pagination).nextCursor ?? cursor;
      if (data.length === PAGE) continue;
    } catch (err) {
      if (!isTransient(err)) throw err;
      if (!failing) note(io, `svc: ${(err as Error).message}; retrying every second`);
      failing = true;
    }
    await sleep(POLL_MS);
  }
}

async function listAuditEvents(ctx: CommandContext): Promise<void> {
  const filter = ctx.positionals[0];
  const count = countOption(ctx);
  const width = outputWidth(ctx.io);
  const { events, head } = await withSessionApi(ctx.io, (api) => newest(api, filter, count));
  // Oldest first, as a log reads: with --follow the new events come below.
  const shownEvents = events.reverse();
  const following = ctx.values.follow === true;
  if (ctx.json && !following) return out(ctx.io, JSON.stringify(shownEvents, null, 2));
  // Following, --json writes one event per line (JSON Lines): an array would never end.
  const print = ctx.json
    ? (batch: AuditEventLine[]) => batch.forEach((e) => out(ctx.io, JSON.stringify(e)))
    : (batch: AuditEventLine[]) => batch.forEach((e) => out(ctx.io, line(row(e), width)));
  if (!ctx.json)
    out(
      ctx.io,
      line(
        COLUMNS.map(([h]) => h),
        width,
      ),
    );
  print(shownEvents);
  if (!following) return out(ctx.io, `results: ${shownEvents.length}`);
  await follow(ctx.io, filter, head, print);
}

export const auditEventCommands: CommandSpec[] = [
  {
    words: ['edge', 'list', 'audit-events'],
    args: "['<filter>']",
    summary:
      'the newest stored audit events, oldest first, e.g. svc edge list audit-events \'outcome = "failure"\' --follow',
    options: { follow: { type: 'boolean', short: 'f' }, limit: { type: 'string', short: 'n' } },
    optionHelp: [
      ['-f, --follow', 'then print new events as they are stored, polling every second, until Ctrl-C'],
      ['-n, --limit <n>', `how many of the newest events to show first (default ${DEFAULT_COUNT})`],
    ],
    positionals: { min: 0, max: 1 },
    run: listAuditEvents,
  },
];
