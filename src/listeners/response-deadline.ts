import type { Context, Middleware, Next } from 'koa';
import { AppError } from '../errors/app-error.js';
import { sendError } from '../errors/envelope.js';

const EXPIRED = Symbol('expired');

/**
 * A server-side deadline for every response. Node stops timing a request once it has been read
 * (`requestTimeout`), so a lost promise or a database call that never returns would otherwise
 * hold the client for as long as it cares to wait. At the deadline the request is answered 503
 * with `Retry-After` and logged with its request id; the answer the handler gives afterwards is
 * dropped (Koa ignores header and status changes once the response is sent), though the work it
 * did to get there, such as a login's writes, stands.
 */
export function createResponseDeadline(seconds: number) {
  const pending = new Set<() => void>();

  const middleware: Middleware = async (ctx: Context, next: Next) => {
    let expire!: () => void;
    const expired = new Promise<typeof EXPIRED>((resolve) => (expire = () => resolve(EXPIRED)));
    const timer = setTimeout(expire, seconds * 1000);
    pending.add(expire);
    // What was set before the handler ran (request id, security and CORS headers) stays on the 503.
    const kept = ctx.res.getHeaderNames();
    const work = next();
    try {
      if ((await Promise.race([work, expired])) !== EXPIRED) return;
    } finally {
      clearTimeout(timer);
      pending.delete(expire);
    }
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
  };

  return {
    middleware,
    /** Answers every request still waiting now, as if its deadline had passed (at shutdown). */
    expireAll(): void {
      for (const expire of [...pending]) expire();
    },
  };
}

export type ResponseDeadline = ReturnType<typeof createResponseDeadline>;
