import type { Context, Middleware, Next } from 'koa';
import type { Logger } from 'pino';
import type { ListenerSpec } from '../config/web-listeners.js';
import { newId } from '../crypto/random.js';
import type { AppError } from '../errors/app-error.js';
import type { MetricsRegistry } from '../services/metrics-registry.js';
import { runInRequestScope } from '../services/request-scope.js';
import { toOriginForm } from './absolute-form-target.js';
import { cors } from './cors.js';
import { answerError } from './error-handler.js';
import { recordHttp } from './metrics.js';
import { clientAddress, HttpRequestScope, RequestState } from './request-context.js';
import { setSecurityHeaders } from './security-headers.js';

export interface RequestFrameOptions {
  logger: Logger;
  spec: ListenerSpec;
  metrics?: MetricsRegistry;
  corsOriginAllowed: (origin: string) => boolean;
}

/**
 * What every request of a listener passes through first, in one middleware (each of these parts
 * was its own middleware, and on the bearer path their dispatch and promises cost more than their
 * work): a request id (echoed in `request-id` and in error bodies) and the request scope
 * (services/request-scope.ts), where audit events find the id, the client address and the caller;
 * the listener, for whatever picks an issuer by Host among this listener's addresses only; the
 * HTTP metrics; the error envelope; the security headers and CORS, so that a browser client sees
 * a 503 as a 503; the origin form of an absolute request target; and one log line per request
 * (at `info`; only the path: query strings may carry tokens).
 */
export function requestFrame({ logger, spec, metrics, corsOriginAllowed }: RequestFrameOptions): Middleware {
  const listener = spec.name;
  const corsThen = cors(corsOriginAllowed);

  async function guarded(
    ctx: Context,
    next: Next,
    refused: AppError | undefined,
    scope: HttpRequestScope,
  ): Promise<void> {
    try {
      setSecurityHeaders(ctx);
      if (refused) throw refused;
      await corsThen(ctx, next);
    } catch (err) {
      answerError(ctx, err);
    }
    try {
      await scope.runBeforeResponse();
    } catch (err) {
      answerError(ctx, err);
    }
  }

  return async function requestFrameMiddleware(ctx: Context, next: Next) {
    const started = process.hrtime.bigint();
    // Before anything reads the path or the Host, the log line and metrics included:
    // `GET https://host/path` is logged, counted and routed as `GET /path`.
    const refused = toOriginForm(ctx);
    // Taken now: a login step that completes hands this request to the provider in-process, which
    // rewrites its method and URL (the auth request's uid would otherwise be logged). A refused
    // target has no path worth logging (reading it may throw).
    const { method } = ctx;
    const path = refused ? undefined : ctx.path;
    const requestId = newId(12);
    const state = new RequestState(logger, requestId);
    state.listener = spec;
    ctx.state = state;
    ctx.res.setHeader('request-id', requestId);
    try {
      const scope = new HttpRequestScope(requestId, ctx);
      await runInRequestScope(scope, guarded, ctx, next, refused, scope);
    } finally {
      const elapsedNs = process.hrtime.bigint() - started;
      if (metrics) recordHttp(metrics, listener, ctx, method, Number(elapsedNs) / 1e9);
      if (logger.isLevelEnabled('info')) {
        const ms = Math.round(Number(elapsedNs) / 1e5) / 10;
        state.log.info(
          { method, path, status: ctx.status, ms, clientAddress: clientAddress(ctx) },
          'request',
        );
      }
    }
  };
}
