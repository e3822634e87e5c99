/** PostgreSQL error fields we map to API errors (bad input is a 4xx, never a 5xx). */
export interface PgError {
  code?: string;
  constraint?: string;
  detail?: string;
}

export const isUniqueViolation = (err: unknown, constraint?: string): boolean =>
  (err as PgError)?.code === '23505' &&
  (constraint === undefined || (err as PgError).constraint === constraint);

export const isForeignKeyViolation = (err: unknown, constraint?: string): boolean =>
  (err as PgError)?.code === '23503' &&
  (constraint === undefined || (err as PgError).constraint === constraint);

/**
 * SQLSTATE classes and codes that say "the database cannot serve this now", not "this request is
 * wrong": connection exceptions (08), the server shutting down or starting (57P01–57P03), too many
 * connections (53300), a statement cancelled by `statement_timeout` (57014), a lock wait given up
 * (55P03) or a transaction ended as a deadlock's victim (40P01: nothing of it was written, and the
 * same request sent again succeeds).
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '55P03', '40P01']);
/** Socket-level failures of the driver reaching the server. */
const UNAVAILABLE_SYSCALLS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
]);
/**
 * What node-postgres and knex say when a connection died or none could be had in time (knex puts
 * the statement in front of the driver's message, so these are not anchored).
 */
const UNAVAILABLE_MESSAGES = [
  /Connection terminated( unexpectedly)?$/,
  /Client has encountered a connection error and is not queryable$/,
  /Client was closed and is not queryable$/,
  /Knex: Timeout acquiring a connection/,
  /timeout exceeded when trying to connect$/,
  /Connection ended unexpectedly$/,
];

/**
 * True when `err` means the database is unreachable, restarting or too slow: the request may
 * succeed when retried, so it is answered 503 rather than 500.
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  const e = err as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string') {
    if (e.code.startsWith('08') && e.code.length === 5) return true;
    if (UNAVAILABLE_STATES.has(e.code) || UNAVAILABLE_SYSCALLS.has(e.code)) return true;
  }
  if (e.name === 'KnexTimeoutError') return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGES.some((m) => m.test(e.message as string)))
    return true;
  // AggregateError (a connect attempt to every address of a host) and wrapped causes.
  if (Array.isArray(e.errors) && e.errors.some((x) => isDatabaseUnavailable(x, depth + 1))) return true;
  return isDatabaseUnavailable(e.cause, depth + 1);
}
