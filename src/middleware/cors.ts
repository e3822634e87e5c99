import type { Context, Middleware, Next } from 'koa';
import koaCors from '@koa/cors';

const ALLOWED_HEADERS = 'authorization, content-type, accept, svc-session, mfa-validation-code';
const EXPOSED_HEADERS = 'expiration-seconds, expires-at, www-authenticate';

/** Paths that may be called cross-origin; never authorization or login pages. */
export function corsAllowedPath(path: string): boolean {
  return (
    path.startsWith('/edge/') ||
    path === '/.well-known/openid-configuration' ||
    [
      '/oidc/token',
      '/oidc/userinfo',
      '/oidc/keys',
      '/oidc/revoke',
      '/oidc/.well-known/openid-configuration',
    ].includes(path)
  );
}

/**
 * CORS (@koa/cors) for the allowed origins on the allowed paths; preflights answered here. The
 * allowed origin is echoed, never `*`, and no credentials are allowed: the APIs take tokens in
 * headers, not cookies. oidc-provider adds its own headers to what it answers: any origin on the
 * public documents (discovery, JWKS), which anyone may read anyway, and on token, userinfo and
 * revocation only the origins this matcher allows (`clientBasedCORS` in oidc/create-provider.ts).
 */
export function cors(originAllowed: (origin: string) => boolean): Middleware {
  const full = koaCors({
    origin: (ctx: Context) => {
      const origin = ctx.get('origin');
      return origin && corsAllowedPath(ctx.path) && originAllowed(origin) ? origin : '';
    },
    allowMethods: 'GET, POST, PUT, PATCH, DELETE',
    allowHeaders: ALLOWED_HEADERS,
    exposeHeaders: EXPOSED_HEADERS,
    maxAge: 600,
  });
  // Without an Origin header @koa/cors only adds `Vary: Origin` (through two awaits); most API
  // clients send none, so that case is answered here with the same header.
  return function corsMiddleware(ctx: Context, next: Next) {
    if (ctx.req.headers.origin === undefined) {
      ctx.vary('Origin');
      return next();
    }
    return full(ctx, next);
  };
}
