import type { Context, Next } from 'koa';

/** API responses are never cached or framed, and always HTTPS (RFC 9700 §4.16). */
export async function securityHeaders(ctx: Context, next: Next) {
  ctx.set('strict-transport-security', 'max-age=31536000');
  ctx.set('x-content-type-options', 'nosniff');
  ctx.set('x-frame-options', 'DENY');
  ctx.set('referrer-policy', 'no-referrer');
  ctx.set('cache-control', 'no-store');
  return next();
}
