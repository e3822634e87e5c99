import Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import { rateLimit, type RateLimiter } from '../middleware/rate-limit.js';
import { oidcLoginRoutes } from './oidc-login-routes.js';
import { oidcSessionRoutes } from './oidc-session-routes.js';
import type { RouteDeps } from './route-deps.js';

/** decisions.md §2, §7: the token endpoint answers a 429 in the RFC 6749 shape, with Retry-After. */
function tokenRateLimit(limiter: RateLimiter): Middleware {
  return async function tokenRateLimitMiddleware(ctx: Context, next: Next) {
    if (ctx.path !== '/oidc/token') return next();
    const wait = limiter.take(ctx.ip);
    if (wait === 0) return next();
    ctx.status = 429;
    ctx.set('retry-after', String(wait));
    ctx.body = { error: 'temporarily_unavailable', error_description: 'too many requests; retry later' };
  };
}

/**
 * Everything under `/oidc` plus the root discovery document, handed to `buildKoaApp` as
 * `routers.oidc` (listeners with `edge-oidc` only): our routes first, then oidc-provider.
 */
export function oidcMiddleware(deps: RouteDeps): Middleware | undefined {
  const { oidc } = deps;
  if (!oidc) return undefined;
  const router = new Router();
  router.use('/oidc/login', rateLimit(deps.loginLimiter));
  oidcLoginRoutes(router, deps, oidc);
  oidcSessionRoutes(router, oidc, deps.principals);
  const routes = router.routes() as unknown as Middleware;
  const limitToken = tokenRateLimit(deps.loginLimiter);
  return oidc.middleware((ctx, next) => limitToken(ctx, () => routes(ctx, next)));
}
