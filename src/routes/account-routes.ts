import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { AppError } from '../errors/app-error.js';
import { parseBody } from '../middleware/parse-body.js';
import { rateLimit } from '../middleware/rate-limit.js';
import {
  accountErrors,
  checkOrigin,
  createGuards,
  LOGIN_COOKIE,
  noticeFrom,
  pageSession,
  seeOther,
  SESSION_COOKIE,
  setCookie,
} from './account-guards.js';
import { renderOverviewPage, renderSignInPage } from './account-pages.js';
import { accountPasskeyRoutes } from './account-passkey-routes.js';
import { accountSessionRoutes } from './account-session-routes.js';
import { accountTotpRoutes } from './account-totp-routes.js';
import type { RouteDeps } from './route-deps.js';

/** Where a sign-in may return to: pages of the account page only, never a URL from the request. */
const RETURN_PATHS = new Set(['/account/', '/account/totp', '/account/sessions', '/account/passkeys']);

const NOTICES: Record<string, string> = {
  'signed-out': 'You are signed out.',
};

/**
 * The account page (`/account/`, docs/operations.md): server-rendered pages and plain forms, on
 * listeners that serve both the client API and the OIDC login.
 */
export function accountRoutes(deps: RouteDeps): Router {
  const router = new Router({ prefix: '/account' });
  const { accountSessions } = deps;

  router.use(accountErrors);
  const guards = createGuards(accountSessions);
  const { loadSession, change } = guards;

  router.get('/', async (ctx) => {
    const session = await loadSession(ctx);
    if (!session) return renderSignInPage(ctx, { notice: noticeFrom(ctx, NOTICES) });
    const identity = await deps.identities.current(session.principal.identityId);
    renderOverviewPage(
      ctx,
      pageSession(ctx),
      { id: identity.id, name: identity.name, type: String(identity.type) },
      noticeFrom(ctx, NOTICES),
    );
  });

  // Starting a sign-in stores a row: limited per address like every other login endpoint.
  router.post('/login', rateLimit(deps.loginLimiter), parseBody(), async (ctx) => {
    checkOrigin(ctx);
    const issuer = deps.oidc.accountTokens.issuerAt(ctx.state.listener, ctx.get('host'));
    if (!issuer) throw new AppError('NOT_FOUND', { message: 'no OIDC issuer is served at this address' });
    const wanted = (ctx.request.body as Record<string, unknown> | undefined)?.returnTo;
    const returnTo = typeof wanted === 'string' && RETURN_PATHS.has(wanted) ? wanted : '/account/';
    const started = await accountSessions.startLogin(issuer.address, issuer.callbackUri, returnTo);
    setCookie(ctx, LOGIN_COOKIE, started.cookie, started.cookieSeconds, 'lax');
    const url = new URL(issuer.authorizationEndpoint);
    url.search = new URLSearchParams({
      client_id: issuer.clientId,
      response_type: 'code',
      scope: 'openid offline_access',
      redirect_uri: started.params.redirectUri,
      state: started.params.state,
      nonce: started.params.nonce,
      code_challenge: started.params.codeChallenge,
      code_challenge_method: 'S256',
    }).toString();
    seeOther(ctx, url.toString());
  });

  router.get('/callback', rateLimit(deps.loginLimiter), async (ctx) => {
    const { code, state, error } = ctx.query;
    const loginCookie = ctx.cookies.get(LOGIN_COOKIE);
    setCookie(ctx, LOGIN_COOKIE, null, 0, 'lax');
    if (typeof error === 'string' || typeof code !== 'string' || typeof state !== 'string') {
      return renderSignInPage(ctx, { status: 400, error: 'The sign-in was not completed. Try again.' });
    }
    if (code.length > 512 || state.length > 512) throw new AppError('ACCOUNT_SIGN_IN_FAILED');
    const done = await accountSessions.finishLogin(
      loginCookie,
      { code, state },
      ctx.req.socket,
      ctx.cookies.get(SESSION_COOKIE),
    );
    setCookie(ctx, SESSION_COOKIE, done.cookie, done.cookieSeconds, 'strict');
    seeOther(ctx, done.returnTo);
  });

  router.post(
    '/logout',
    async (ctx: Context, next: Next) => {
      checkOrigin(ctx);
      // Signed out already: nothing to protect, nothing to end.
      if (!ctx.cookies.get(SESSION_COOKIE)) return seeOther(ctx, '/account/?done=signed-out');
      return next();
    },
    ...change,
    async (ctx) => {
      await accountSessions.signOut(ctx.cookies.get(SESSION_COOKIE));
      setCookie(ctx, SESSION_COOKIE, null, 0, 'strict');
      seeOther(ctx, '/account/?done=signed-out');
    },
  );

  accountTotpRoutes(router, deps, guards);
  accountSessionRoutes(router, deps, guards);
  accountPasskeyRoutes(router, deps, guards);
  return router;
}
