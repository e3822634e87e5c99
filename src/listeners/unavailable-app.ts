import Koa from 'koa';
import type { ListenerSpec } from '../config/web-listeners.js';
import { AppError } from '../errors/app-error.js';
import { listenerFrame, type ListenerAppOptions } from './build-koa-app.js';

const MESSAGES = {
  starting: 'the service is starting; retry in a moment',
  stopping: 'the service is stopping; retry on a new connection',
} as const;

/**
 * What a listener answers while the application is not behind it: at start-up, until every part
 * is built, and at shutdown, to requests that arrive on a connection that was already open.
 * Every request gets an immediate 503 with `Retry-After` (RFC 9110 §15.6.4) in the error
 * envelope, except `/health/live`: the process runs, and a restart would not help.
 */
export function unavailableApp(
  phase: keyof typeof MESSAGES,
  spec: ListenerSpec,
  options: ListenerAppOptions,
): Koa {
  const app = listenerFrame(new Koa(), spec, { ...options, logger: options.logger.child({ phase }) });
  app.use((ctx) => {
    // The route label of these answers in the HTTP series.
    ctx.state.routeTemplate = phase;
    if (ctx.path === '/health/live' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.body = { status: 'ok' };
      return;
    }
    throw new AppError('SERVICE_UNAVAILABLE', {
      message: MESSAGES[phase],
      headers: { 'Retry-After': '1' },
    });
  });
  return app;
}
