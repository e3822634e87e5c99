import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError, isAppError } from '../errors/app-error.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import type { Oidc } from '../oidc/create-oidc.js';
import type { AuthRequest, LoginOutcome } from '../oidc/login-flow.js';
import { pendingChallengesOf } from '../oidc/second-factors.js';
import { loginExtrasSchema } from '../schemas/authenticate-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import { answerOutcome, oidcFactorRoutes } from './oidc-factor-routes.js';
import { authRequestIdOf, wantsHtml } from './oidc-login-http.js';
import { renderLoginPage, type LoginPage } from './oidc-login-pages.js';
import { primaryLoginsFor } from './primary-logins.js';
import type { RouteDeps } from './route-deps.js';

/** Login page path → primary method (decisions.md §5: `/password` is an alias of `/username`). */
const PAGES: { path: string; page: LoginPage; method: string }[] = [
  { path: 'username', page: 'username', method: 'password' },
  { path: 'password', page: 'username', method: 'password' },
  { path: 'cert', page: 'cert', method: 'cert' },
  { path: 'ext-jwt', page: 'ext-jwt', method: 'ext-jwt' },
];

/** `configTypes` as a JSON array or a repeated form field (one value arrives as a string). */
function configTypesOf(body: Record<string, unknown>): string[] | undefined {
  const raw = typeof body.configTypes === 'string' ? [body.configTypes] : body.configTypes;
  return parseInput(loginExtrasSchema, { configTypes: raw }).configTypes;
}

/**
 * Answers a primary login (spec 3.1): the provider already sent its 303, or the factors still
 * owed with the challenges the second-factor hook left (a TOTP or enrollment page for a browser).
 */
async function respond(ctx: Context, deps: RouteDeps, request: AuthRequest, outcome: LoginOutcome) {
  if (outcome.kind === 'redirected') return;
  const owed = {
    kind: 'queries' as const,
    authQueries: outcome.authQueries,
    challenges: pendingChallengesOf(ctx),
  };
  return answerOutcome(ctx, deps.oidcFactors, request, owed);
}

/**
 * `GET|POST /oidc/login/{username,password,cert,ext-jwt}` (spec 4.2, decisions.md §5). GET shows
 * the page (HTML for browsers, else `{authRequestId, method}`); POST runs the login flow. Wrong
 * credentials: 401 INVALID_AUTH and the auth request stays usable; a browser form gets the page
 * again with the message.
 */
export function oidcLoginRoutes(router: Router, deps: RouteDeps, oidc: Oidc): void {
  const primaryLogins = primaryLoginsFor(deps);
  oidcFactorRoutes(router, oidc, deps.oidcFactors);

  for (const { path, page, method } of PAGES) {
    router.get(`/oidc/login/${path}`, async (ctx: Context) => {
      const request = await oidc.login.loadAuthRequest(ctx, authRequestIdOf(ctx));
      if (wantsHtml(ctx)) return renderLoginPage(ctx, page, request.uid);
      ctx.body = { authRequestId: request.uid, method };
    });

    router.post(`/oidc/login/${path}`, parseBody(), async (ctx: Context) => {
      const body = bodyOf(ctx);
      const request: AuthRequest = await oidc.login.loadAuthRequest(ctx, authRequestIdOf(ctx, body));
      const primary = Object.hasOwn(primaryLogins, method) ? primaryLogins[method] : undefined;
      if (!primary) throw new AppError('NOT_FOUND', { message: `login method ${method} is not available` });
      try {
        const outcome = await oidc.login.primaryLogin(ctx, request, {
          method,
          configTypes: configTypesOf(body),
          primary: () => primary(ctx),
        });
        await respond(ctx, deps, request, outcome);
      } catch (err) {
        if (!(isAppError(err) && err.code === 'INVALID_AUTH' && ctx.is('urlencoded') && wantsHtml(ctx)))
          throw err;
        renderLoginPage(ctx, page, request.uid, { status: 401, error: 'The credentials were not accepted.' });
      }
    });
  }
}
