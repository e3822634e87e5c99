import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import { mappedIPv4 } from '../config/cidr.js';
import { newId } from '../crypto/random.js';
import { runInRequestScope } from '../services/request-scope.js';
import { requestTargetRefused } from './absolute-form-target.js';

/**
 * The address of the client, for logs, audit events and per-address limits: the TCP peer, or the
 * client a trusted PROXY protocol header named (listeners/proxy-listener.ts). HTTP proxy headers
 * are never trusted (`app.proxy` stays off). An IPv4 client is always written as IPv4, also when a
 * dual-stack socket or an IPv6 PROXY header reports it as `::ffff:a.b.c.d`, so that one client
 * has one spelling in logs and audit events.
 */
export function clientAddress(ctx: Context): string {
  const { ip } = ctx;
  return mappedIPv4(ip) ?? ip;
}

/**
 * Gives every request an id (echoed in `request-id` and in error bodies) and writes one log line
 * per request. Only the path is logged: query strings may carry tokens. The rest of the request
 * runs in a request scope (services/request-scope.ts), where audit events find the request id,
 * the client address and the caller.
 */
export function requestContext(logger: Logger) {
  return async function requestContextMiddleware(ctx: Context, next: Next) {
    const started = process.hrtime.bigint();
    // Taken now: a login step that completes hands this request to the provider in-process, which
    // rewrites its method and URL (the auth request's uid would otherwise be logged).
    // A target refused as unparsable or malformed has no path worth logging (reading it may throw).
    const { method } = ctx;
    const path = requestTargetRefused(ctx) ? undefined : ctx.path;
    const requestId = newId(12);
    ctx.state.requestId = requestId;
    // The request's child logger is made when first used: at `warn` most requests log nothing.
    let log: Logger | undefined;
    Object.defineProperty(ctx.state, 'log', {
      get: () => (log ??= logger.child({ requestId })),
      set: (value: Logger) => (log = value),
      enumerable: true,
      configurable: true,
    });
    ctx.set('request-id', requestId);
    try {
      await runInRequestScope({ requestId, sourceAddress: () => clientAddress(ctx) }, next);
    } finally {
      if (logger.isLevelEnabled('info')) {
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        const fields = { method, path, status: ctx.status, ms: Math.round(ms * 10) / 10 };
        ctx.state.log.info({ ...fields, clientAddress: clientAddress(ctx) }, 'request');
      }
    }
  };
}
