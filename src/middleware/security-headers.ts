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

/**
 * The headers helmet sets with these options, taken once: they depend on nothing in the request,
 * and helmet's per-request chain (a promise and a dozen small middlewares) cost more than the
 * headers themselves. Helmet sets them synchronously, so one call against a recording response
 * yields the list; helmet stays the one place that decides what they are.
 */
function recordHelmetHeaders(): readonly (readonly [string, string])[] {
  const recorded: [string, string][] = [['Cache-Control', 'no-store']];
  const res = {
    setHeader: (name: string, value: unknown) => void recorded.push([name, String(value)]),
    // Helmet drops X-Powered-By, which Koa never sets.
    removeHeader: () => undefined,
  };
  void helmetHeaders({ req: {}, res } as unknown as Context, async () => undefined);
  if (recorded.length < 2) throw new Error('helmet set no headers synchronously');
  return recorded;
}

/** …and never cached: every answer may carry a token or personal data. */
export const SECURITY_HEADERS = recordHelmetHeaders();

/** Sets the security headers on the response (sync; part of the listener frame). */
export function setSecurityHeaders(ctx: Context): void {
  const { res } = ctx;
  for (const [name, value] of SECURITY_HEADERS) res.setHeader(name, value);
}

export function securityHeaders(ctx: Context, next: Next) {
  setSecurityHeaders(ctx);
  return next();
}
