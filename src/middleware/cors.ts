import type { Context, Next } from 'koa';

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

/** CORS for the allowed origins on the allowed paths; preflights answered here. */
export function cors(originAllowed: (origin: string) => boolean) {
  return async function corsMiddleware(ctx: Context, next: Next) {
    const origin = ctx.get('origin');
    if (!origin || !corsAllowedPath(ctx.path) || !originAllowed(origin)) return next();
    ctx.vary('Origin');
    ctx.set('access-control-allow-origin', origin);
    ctx.set('access-control-expose-headers', EXPOSED_HEADERS);
    if (ctx.method === 'OPTIONS' && ctx.get('access-control-request-method')) {
      ctx.set('access-control-allow-methods', 'GET, POST, PUT, PATCH, DELETE');
      ctx.set('access-control-allow-headers', ALLOWED_HEADERS);
      ctx.set('access-control-max-age', '600');
      ctx.status = 204;
      return;
    }
    return next();
  };
}
