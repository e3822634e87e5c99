import Router from '@koa/router';
import type { Context, Middleware, Next } from 'koa';
import { checkQuery } from '../middleware/check-input.js';
import { oauthErrors } from '../middleware/oauth-errors.js';
import { LOGIN_PREFIX } from '../oidc/login-paths.js';
import { rateLimit } from '../middleware/rate-limit.js';
import { INTROSPECTION_PATH, oidcIntrospectionRoutes } from './oidc-introspection-routes.js';
import { oidcLoginRoutes } from './oidc-login-routes.js';
import { oidcSessionRoutes } from './oidc-session-routes.js';
import type { RouteDeps } from './route-deps.js';

const isLoginPath = (path: string) => path === LOGIN_PREFIX || path.startsWith(`${LOGIN_PREFIX}/`);

const AUTHORIZATION = '/oidc/authorization';
const DEVICE_AUTHORIZATION = '/oidc/device/auth';
const CODE_VERIFICATION = '/oidc/device';
/** The provider's resume of an auth request: `/oidc/authorization/<uid>`. */
const isResumePath = (path: string) => path.startsWith(`${AUTHORIZATION}/`);

/** Endpoints that answer refusals in the OAuth form (`oauthErrors`), not the Edge envelope. */
const OAUTH_PATHS = new Set([
  AUTHORIZATION,
  '/oidc/token',
  '/oidc/revoke',
  DEVICE_AUTHORIZATION,
  '/oidc/userinfo',
  INTROSPECTION_PATH,
]);

/**
 * In front of the provider and our session endpoints: per-address limits (the token endpoint
 * shares the login budget; the authorization endpoint, which stores an auth request on every call,
 * has its own, and its resume path spends the same budget: a resume of an unfinished login replaces
 * its auth request just as well; introspection is counted per caller by its route), and query parameters free of control characters — the provider
 * would store them with the auth request, and PostgreSQL refuses NUL in jsonb. Ids in form bodies
 * (codes, tokens) never reach SQL as they are: the adapter looks them up by their hash.
 */
function oauthGate(deps: RouteDeps): Middleware {
  const limits: Record<string, Middleware> = {
    '/oidc/token': rateLimit(deps.loginLimiter),
    [AUTHORIZATION]: rateLimit(deps.authorizationLimiter),
    // Each stores a row as an auth request does: a device code, the code form's session.
    [DEVICE_AUTHORIZATION]: rateLimit(deps.authorizationLimiter),
    [CODE_VERIFICATION]: chain(rateLimit(deps.authorizationLimiter), deps.userCodeThrottle.gate),
  };
  const noLimit: Middleware = (_ctx, next) => next();
  const limitOf = (path: string) =>
    isResumePath(path) ? limits[AUTHORIZATION]! : Object.hasOwn(limits, path) ? limits[path]! : noLimit;
  return async function oauthGateMiddleware(ctx: Context, next: Next) {
    const limit = limitOf(ctx.path);
    const gated = () => limit(ctx, () => checkQuery(ctx, next));
    return OAUTH_PATHS.has(ctx.path) || isResumePath(ctx.path) ? oauthErrors(ctx, gated) : gated();
  };
}

const chain =
  (first: Middleware, second: Middleware): Middleware =>
  (ctx, next) =>
    first(ctx, () => second(ctx, next));

/**
 * Everything under `/oidc` plus the root discovery document, handed to `buildKoaApp` as
 * `routers.oidc` (listeners with `edge-oidc` only): our routes first, then oidc-provider.
 */
export function oidcMiddleware(deps: RouteDeps): Middleware {
  const { oidc } = deps;
  const router = new Router();
  router.use(LOGIN_PREFIX, rateLimit(deps.loginLimiter), checkQuery);
  oidcLoginRoutes(router, deps, oidc);
  oidcSessionRoutes(router, oidc, deps.principals);
  oidcIntrospectionRoutes(router, deps);
  const routes = router.routes() as unknown as Middleware;
  const gate = oauthGate(deps);
  return oidc.dispatch((ctx, next) =>
    isLoginPath(ctx.path) ? routes(ctx, next) : gate(ctx, () => routes(ctx, next)),
  );
}
