import type { Context, Middleware, Next } from 'koa';
import { AppError } from '../errors/app-error.js';
import { sendError } from '../errors/envelope.js';

interface Pending {
  /** When (performance.now(), a monotonic clock) the request is answered 503 if still waiting. */
  dueAt: number;
  expire(): void;
}

/**
 * A server-side deadline for every response. Node stops timing a request once it has been read
 * (`requestTimeout`), so a lost promise or a database call that never returns would otherwise
 * hold the client for as long as it cares to wait. At the deadline the request is answered 503
 * with `Retry-After` and logged with its request id; the answer the handler gives afterwards is
 * dropped (Koa ignores header and status changes once the response is sent), though the work it
 * did to get there, such as a login's writes, stands.
 *
 * Every request has the same deadline, so the requests waiting are in deadline order as they
 * arrived: one timer, set for the oldest, serves them all (a timer and a promise race per request
 * were a measurable part of the bearer path's CPU).
 */
export function createResponseDeadline(seconds: number) {
  const ms = seconds * 1000;
  const pending = new Set<Pending>();
  let timer: NodeJS.Timeout | undefined;

  // Unreferenced: a request still waiting keeps the process alive through its socket anyway.
  const arm = (delay: number) => (timer = setTimeout(sweep, delay).unref());

  function sweep(): void {
    timer = undefined;
    const now = performance.now();
    for (const entry of pending) {
      if (entry.dueAt > now) {
        arm(entry.dueAt - now);
        return;
      }
      pending.delete(entry);
      entry.expire();
    }
  }

  const middleware: Middleware = (ctx: Context, next: Next) =>
    new Promise<void>((resolve, reject) => {
      // What was set before the handler ran (request id, security and CORS headers) stays on the 503.
      const kept = ctx.res.getHeaderNames();
      const work = next();
      const entry: Pending = {
        dueAt: performance.now() + ms,
        expire() {
          answerExpired(ctx, work, kept, seconds);
          resolve();
        },
      };
      pending.add(entry);
      if (!timer) arm(ms);
      work.then(
        () => {
          pending.delete(entry);
          resolve();
        },
        (err: unknown) => {
          pending.delete(entry);
          reject(err);
        },
      );
    });

  return {
    middleware,
    /** Answers every request still waiting now, as if its deadline had passed (at shutdown). */
    expireAll(): void {
      for (const entry of [...pending]) {
        pending.delete(entry);
        entry.expire();
      }
    },
  };
}

/** The 503 for a request past its deadline, unless its answer is already under way. */
function answerExpired(ctx: Context, work: Promise<unknown>, kept: string[], seconds: number): void {
  const log = ctx.state.log;
  // The path the client asked for: an in-process resume or the /oidc dispatch rewrites ctx.path.
  const path = ctx.originalUrl.split('?')[0];
  log?.error({ path, deadlineSeconds: seconds }, 'no response within the deadline: answered 503');
  work.then(
    () => log?.warn('a request finished after its deadline; its answer was dropped'),
    (err: unknown) => log?.warn({ err }, 'a request failed after its deadline'),
  );
  if (ctx.headerSent) {
    // A response already under way cannot become a 503; the connection must not stay held.
    ctx.req.socket.destroy();
    return;
  }
  // `Connection: close` may have been set since, by a shutdown: it stays too.
  for (const name of ctx.res.getHeaderNames())
    if (!kept.includes(name) && name !== 'connection') ctx.res.removeHeader(name);
  ctx.respond = true;
  const message = 'the service could not answer in time; retry in a moment';
  if (ctx.state.oauthEndpoint) {
    // OAuth clients read RFC 6749 bodies (§5.2); this is the error RFC 6749 §4.1.2.1 names.
    ctx.status = 503;
    ctx.set('Retry-After', '1');
    ctx.body = { error: 'temporarily_unavailable', error_description: message };
    return;
  }
  sendError(
    ctx,
    new AppError('SERVICE_UNAVAILABLE', { message, headers: { 'Retry-After': '1' } }),
    ctx.state.requestId ?? '',
  );
}

export type ResponseDeadline = ReturnType<typeof createResponseDeadline>;
