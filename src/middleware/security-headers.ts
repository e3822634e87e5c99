import type { Context, Middleware, Next } from 'koa';
import helmet from 'koa-helmet';

/**
 * API responses are never framed, sniffed or sent over plain HTTP (RFC 9700 §4.16), through
 * helmet. Left out: the content security policy, which each HTML page sets for itself; the
 * cross-origin opener and resource policies, which would cut a single-page app's sign-in popup
 * from its opener and stop other origins reading the public discovery and key documents.
 */
const helmetHeaders = helmet({
  contentSecurityPolicy: false,
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  strictTransportSecurity: { maxAge: 31536000, includeSubDomains: false },
  xFrameOptions: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
}) as Middleware;

/** …and never cached: every answer may carry a token or personal data. */
export function securityHeaders(ctx: Context, next: Next) {
  ctx.set('cache-control', 'no-store');
  return helmetHeaders(ctx, next);
}
