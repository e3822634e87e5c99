import type { Context, Next } from 'koa';
import { AppError, isAppError } from '../errors/app-error.js';
import { sendError } from '../errors/envelope.js';
import { isDatabaseUnavailable } from '../db/db-errors.js';

interface HttpishError {
  status?: number;
  statusCode?: number;
  type?: string;
}

/** Errors raised by koa-body/raw-body and Koa itself, mapped to our catalog. */
function fromHttpError(err: HttpishError): AppError | undefined {
  const status = err.status ?? err.statusCode;
  if (status === 413 || err.type === 'entity.too.large') return new AppError('REQUEST_ENTITY_TOO_LARGE');
  if (status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE');
  if (status === 404) return new AppError('NOT_FOUND');
  if (status === 405) return new AppError('METHOD_NOT_ALLOWED');
  return undefined;
}

/**
 * The database is down, restarting or too slow (statement or pool timeout): a retry may succeed,
 * so the client gets 503 with Retry-After, not a 500 that reads as a bug.
 */
function databaseUnavailableError(err: unknown): AppError | undefined {
  if (!isDatabaseUnavailable(err)) return undefined;
  return new AppError('SERVICE_UNAVAILABLE', {
    message: 'the database is unavailable or too slow; retry later',
    headers: { 'retry-after': '1' },
    detail: (err as Error).message,
  });
}

/**
 * The one place that turns errors into the Edge envelope. Unknown errors are
 * logged with the request id and answered SERVER_ERROR with no detail.
 */
export function answerError(ctx: Context, err: unknown): void {
  let appError = isAppError(err)
    ? err
    : (databaseUnavailableError(err) ?? fromHttpError(err as HttpishError));
  if (!appError) {
    ctx.state.log?.error({ err }, 'unhandled error');
    appError = new AppError('SERVER_ERROR');
  } else if (appError.detail !== undefined) {
    ctx.state.log?.warn({ code: appError.code, detail: appError.detail }, 'request refused');
  }
  sendError(ctx, appError, ctx.state.requestId ?? '');
}

/** answerError as a middleware around what follows it. */
export async function errorHandler(ctx: Context, next: Next) {
  try {
    await next();
  } catch (err) {
    answerError(ctx, err);
  }
}

/** Unknown paths get a JSON 404, under /oidc too. */
export async function notFound(ctx: Context) {
  throw new AppError('NOT_FOUND', { message: `no resource at ${ctx.method} ${ctx.path}` });
}
