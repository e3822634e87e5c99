import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import { newId } from '../crypto/random.js';

/**
 * Gives every request an id (echoed in `request-id` and in error bodies) and writes one log line
 * per request. Only the path is logged: query strings may carry tokens.
 */
export function requestContext(logger: Logger) {
  return async function requestContextMiddleware(ctx: Context, next: Next) {
    const started = process.hrtime.bigint();
    // Taken now: a login step that completes hands this request to the provider in-process, which
    // rewrites its method and URL (the auth request's uid would otherwise be logged).
    const { method, path } = ctx;
    const requestId = newId(12);
    ctx.state.requestId = requestId;
    ctx.state.log = logger.child({ requestId });
    ctx.set('request-id', requestId);
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      ctx.state.log.info(
        { method, path, status: ctx.status, ms: Math.round(ms * 10) / 10, clientAddress: ctx.ip },
        'request',
      );
    }
  };
}
