import Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import { checkInput, checkQuery } from '../middleware/check-input.js';
import { rateLimit, type RateLimiter } from '../middleware/rate-limit.js';
import { oidcLoginRoutes } from './oidc-login-routes.js';
import { oidcSessionRoutes } from './oidc-session-routes.js';
import type { RouteDeps } from './route-deps.js';

const LOGIN_PREFIX = '/oidc/login';

const isLoginPath = (path: string) => path === LOGIN_PREFIX || path.startsWith(`${LOGIN_PREFIX}/`);

/** RFC 6749 §5.2 error bodies for the OAuth endpoints (our login routes use the Edge envelope). */
function oauthError(ctx: Context, status: number, error: string, description: string): void {
  ctx.status = status;
  ctx.body = { error, error_description: description };
}

/**
 * Per-address limits in the RFC 6749 shape, with Retry-After (docs/operations.md): the token
 * endpoint shares the login budget; the authorization endpoint, which stores an auth request on
 * every call, has its own.
 */
function oauthRateLimits(deps: RouteDeps): Middleware {
  const limiters: Record<string, RateLimiter> = {
    '/oidc/token': deps.loginLimiter,
    '/oidc/authorization': deps.authorizationLimiter,
  };
  return async function oauthRateLimitMiddleware(ctx: Context, next: Next) {
    const limiter = Object.hasOwn(limiters, ctx.path) ? limiters[ctx.path] : undefined;
    const wait = limiter ? limiter.take(ctx.ip) : 0;
    if (wait === 0) return next();
    ctx.set('retry-after', String(wait));
    oauthError(ctx, 429, 'temporarily_unavailable', 'too many requests; retry later');
  };
}

/**
 * Query parameters of the provider's endpoints (and our OAuth-style session endpoints) with
 * control characters never reach the provider: it would store them with the auth request, and
 * PostgreSQL refuses NUL in jsonb. Body parameters reach the database only as ids, which the
 * Postgres adapter refuses itself.
 */
async function oauthQueryCheck(ctx: Context, next: Next) {
  if (isLoginPath(ctx.path)) return next();
  const problem = checkInput(ctx.query);
  if (!problem) return next();
  const where = problem.field ? `parameter ${problem.field}` : 'a parameter name';
  oauthError(ctx, 400, 'invalid_request', `${where} ${problem.reason}`);
}

/**
 * Everything under `/oidc` plus the root discovery document, handed to `buildKoaApp` as
 * `routers.oidc` (listeners with `edge-oidc` only): our routes first, then oidc-provider.
 */
export function oidcMiddleware(deps: RouteDeps): Middleware | undefined {
  const { oidc } = deps;
  if (!oidc) return undefined;
  const router = new Router();
  router.use(LOGIN_PREFIX, rateLimit(deps.loginLimiter), checkQuery);
  oidcLoginRoutes(router, deps, oidc);
  oidcSessionRoutes(router, oidc, deps.principals);
  const routes = router.routes() as unknown as Middleware;
  const limits = oauthRateLimits(deps);
  return oidc.middleware((ctx, next) => limits(ctx, () => oauthQueryCheck(ctx, () => routes(ctx, next))));
}
