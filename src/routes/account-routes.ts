import Router from '@koa/router';
import type { Context, Next } from 'koa';
import { accountCallbackUri } from '../config/uri-patterns.js';
import { AppError } from '../errors/app-error.js';
import { parseBody } from '../middleware/parse-body.js';
import { rateLimit } from '../middleware/rate-limit.js';
import { parseApiSessionList } from '../schemas/api-session-schemas.js';
import type { AccountSession } from '../services/account/account-session-service.js';
import { qrDataUrl } from '../services/mfa/qr-code.js';
import {
  renderAccountErrorPage,
  renderOverviewPage,
  renderRecoveryCodesPage,
  renderSessionsPage,
  renderSignInPage,
  renderTotpPage,
  type TotpPageState,
} from './account-pages.js';
import type { RouteDeps } from './route-deps.js';

/** The session cookie: this host only (`__Host-`), never sent along from another site. */
export const SESSION_COOKIE = '__Host-svc-account';
/**
 * The sign-in in flight: `Lax`, the one cookie that must come back with the top-level navigation
 * that returns from the login pages to the callback.
 */
export const LOGIN_COOKIE = '__Host-svc-account-login';

/** Where a sign-in may return to: pages of the account page only, never a URL from the request. */
const RETURN_PATHS = new Set(['/account/', '/account/totp', '/account/sessions', '/account/passkeys']);

const NOTICES: Record<string, string> = {
  'signed-out': 'You are signed out.',
  'totp-on': 'Your authenticator app is on: signing in now asks for its code.',
  'totp-cancelled': 'The setup was cancelled.',
  'totp-removed': 'Your authenticator app was removed.',
  'session-ended': 'The session was ended.',
};

const noticeOf = (ctx: Context) => {
  const done = ctx.query.done;
  return typeof done === 'string' && Object.hasOwn(NOTICES, done) ? NOTICES[done] : undefined;
};

function setCookie(
  ctx: Context,
  name: string,
  value: string | null,
  seconds: number,
  sameSite: 'strict' | 'lax',
) {
  ctx.cookies.set(name, value, {
    httpOnly: true,
    secure: true,
    sameSite,
    path: '/',
    maxAge: value === null ? 0 : seconds * 1000,
    overwrite: true,
  });
}

const seeOther = (ctx: Context, location: string) => {
  ctx.status = 303;
  ctx.redirect(location);
};

export function accountOf(ctx: Context): AccountSession {
  const session = ctx.state.account as AccountSession | undefined;
  if (!session) throw new AppError('ACCOUNT_SIGN_IN_REQUIRED');
  return session;
}

const pageSession = (ctx: Context) => ({ csrfToken: accountOf(ctx).csrfToken });

/**
 * A state-changing request must come from a page of this very origin (the `Origin` header that
 * browsers send with every POST and fetch), besides carrying its session's CSRF token.
 */
export function checkOrigin(ctx: Context): void {
  const origin = ctx.get('origin');
  let host: string | undefined;
  try {
    const url = new URL(origin);
    host = url.protocol === 'https:' && url.pathname === '/' ? url.host : undefined;
  } catch {
    host = undefined;
  }
  if (!host || host !== ctx.host.toLowerCase()) throw new AppError('CSRF_REFUSED');
}

function formField(ctx: Context, name: string, maxLength = 256): string {
  const body = (ctx.request.body ?? {}) as Record<string, unknown>;
  const value = body[name];
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    throw new AppError('COULD_NOT_VALIDATE', { cause: { field: name, reason: 'is required' } });
  }
  return value;
}

/**
 * The account page (`/account/`, docs/operations.md): server-rendered pages and plain forms, on
 * listeners that serve both the client API and the OIDC login.
 */
export function accountRoutes(deps: RouteDeps): Router {
  const router = new Router({ prefix: '/account' });
  const { accountSessions } = deps;

  /** Every refusal is a page of the account page, never the API envelope, and never a 5xx for input. */
  router.use(async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (err) {
      if (!(err instanceof AppError) || err.status >= 500) throw err;
      if (err.code === 'ACCOUNT_SIGN_IN_REQUIRED' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
        return seeOther(ctx, '/account/');
      }
      for (const [name, value] of Object.entries(err.headers ?? {})) ctx.set(name, value);
      const session = ctx.state.account as AccountSession | undefined;
      renderAccountErrorPage(ctx, err.status, err.message, session && { csrfToken: session.csrfToken });
    }
  });

  /** The session of the request, when its cookie names one that is still good; a stale cookie goes. */
  async function loadSession(ctx: Context): Promise<AccountSession | undefined> {
    const cookie = ctx.cookies.get(SESSION_COOKIE);
    const session = await accountSessions.current(cookie, ctx.req.socket);
    if (cookie && !session) setCookie(ctx, SESSION_COOKIE, null, 0, 'strict');
    ctx.state.account = session;
    return session;
  }

  const signedIn = async (ctx: Context, next: Next) => {
    if (!(await loadSession(ctx))) throw new AppError('ACCOUNT_SIGN_IN_REQUIRED');
    return next();
  };

  /** A change: same origin, a form body, and the session's synchronizer token. */
  const change = [
    async (ctx: Context, next: Next) => {
      checkOrigin(ctx);
      return next();
    },
    parseBody(),
    signedIn,
    async (ctx: Context, next: Next) => {
      accountSessions.checkCsrf(
        accountOf(ctx),
        (ctx.request.body as Record<string, unknown> | undefined)?.csrf,
      );
      return next();
    },
  ];

  router.get('/', async (ctx) => {
    const session = await loadSession(ctx);
    if (!session) return renderSignInPage(ctx, { notice: noticeOf(ctx) });
    const identity = await deps.identities.current(session.principal.identityId);
    renderOverviewPage(
      ctx,
      pageSession(ctx),
      { id: identity.id, name: identity.name, type: String(identity.type) },
      noticeOf(ctx),
    );
  });

  // Starting a sign-in stores a row: limited per address like every other login endpoint.
  router.post('/login', rateLimit(deps.loginLimiter), parseBody(), async (ctx) => {
    checkOrigin(ctx);
    const issuer = deps.oidc.accountTokens.issuerAt(ctx.state.listener, ctx.get('host'));
    if (!issuer) throw new AppError('NOT_FOUND', { message: 'no OIDC issuer is served at this address' });
    const wanted = (ctx.request.body as Record<string, unknown> | undefined)?.returnTo;
    const returnTo = typeof wanted === 'string' && RETURN_PATHS.has(wanted) ? wanted : '/account/';
    const started = await accountSessions.startLogin(
      issuer.address,
      accountCallbackUri(issuer.address),
      returnTo,
    );
    setCookie(ctx, LOGIN_COOKIE, started.cookie, started.cookieSeconds, 'lax');
    const url = new URL(issuer.authorizationEndpoint);
    url.search = new URLSearchParams({
      client_id: 'svc',
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

  const guards = { signedIn, change };
  totpRoutes(router, deps, guards);
  sessionRoutes(router, deps, guards);
  return router;
}

type Guard = (ctx: Context, next: Next) => Promise<unknown>;
/** `signedIn` for pages (a GET without a session goes to the sign-in page), `change` for every POST. */
interface Guards {
  signedIn: Guard;
  change: Guard[];
}

/** The enrollment in progress is reached only by the API session of this account page session. */
const reachOf = (s: AccountSession) => ({ startedBySession: s.principal.sessionId });

async function totpState(
  deps: RouteDeps,
  s: AccountSession,
  recoveryCodes?: string[],
): Promise<TotpPageState> {
  const { identityId } = s.principal;
  const detail = await deps.totp.detail(identityId, reachOf(s));
  if (!detail) return { kind: 'none' };
  if (detail.isVerified) {
    return { kind: 'verified', remaining: await deps.totp.remainingRecoveryCodes(identityId) };
  }
  const url = detail.provisioningUrl ?? '';
  const secret = new URL(url).searchParams.get('secret') ?? '';
  return { kind: 'enrolling', qrDataUrl: await qrDataUrl(url), secret, recoveryCodes };
}

/** A wrong code (or too many) shows the page again with the message tied to the code's field. */
async function withCodeErrors(
  ctx: Context,
  deps: RouteDeps,
  fieldId: string,
  work: () => Promise<void>,
): Promise<void> {
  try {
    await work();
  } catch (err) {
    const codeErrors = ['MFA_INVALID_TOKEN', 'INVALID_TOTP_CODE', 'RATE_LIMITED', 'COULD_NOT_VALIDATE'];
    if (!(err instanceof AppError) || !codeErrors.includes(err.code)) throw err;
    for (const [name, value] of Object.entries(err.headers ?? {})) ctx.set(name, value);
    const message =
      err.code === 'RATE_LIMITED'
        ? 'Too many wrong codes. Wait a few minutes, then try again.'
        : err.code === 'COULD_NOT_VALIDATE'
          ? 'Enter the code your app shows.'
          : 'That code is not right. Enter the code your app shows now.';
    const s = accountOf(ctx);
    renderTotpPage(ctx, pageSession(ctx), await totpState(deps, s), {
      status: err.status,
      error: message,
      invalidField: fieldId,
    });
  }
}

function totpRoutes(router: Router, deps: RouteDeps, { signedIn, change }: Guards): void {
  const { totp } = deps;
  router.get('/totp', signedIn, async (ctx) => {
    renderTotpPage(ctx, pageSession(ctx), await totpState(deps, accountOf(ctx)), { notice: noticeOf(ctx) });
  });

  router.post('/totp/enroll', ...change, async (ctx) => {
    const s = accountOf(ctx);
    try {
      const started = await totp.startEnrollment(
        s.principal.identityId,
        s.principal.identityName,
        s.principal.sessionId,
      );
      renderTotpPage(ctx, pageSession(ctx), await totpState(deps, s, started.recoveryCodes));
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'MFA_EXISTS')) throw err;
      renderTotpPage(ctx, pageSession(ctx), await totpState(deps, s), {
        status: 409,
        error:
          'An authenticator app is already being set up for your identity elsewhere. Finish or remove it there first.',
      });
    }
  });

  router.post('/totp/verify', ...change, async (ctx) => {
    const s = accountOf(ctx);
    await withCodeErrors(ctx, deps, 'code', async () => {
      await totp.verifyEnrollment(s.principal.identityId, formField(ctx, 'code', 16), reachOf(s));
      seeOther(ctx, '/account/totp?done=totp-on');
    });
  });

  router.post('/totp/cancel', ...change, async (ctx) => {
    const s = accountOf(ctx);
    await totp.abandonEnrollment(s.principal.identityId, reachOf(s));
    seeOther(ctx, '/account/totp?done=totp-cancelled');
  });

  router.post('/totp/remove', ...change, async (ctx) => {
    const s = accountOf(ctx);
    await withCodeErrors(ctx, deps, 'remove-code', async () => {
      await totp.remove(s.principal.identityId, formField(ctx, 'remove-code', 32));
      seeOther(ctx, '/account/totp?done=totp-removed');
    });
  });

  router.post('/totp/recovery-codes', ...change, async (ctx) => {
    const s = accountOf(ctx);
    await withCodeErrors(ctx, deps, 'regenerate-code', async () => {
      const codes = await totp.regenerateRecoveryCodes(
        s.principal.identityId,
        formField(ctx, 'regenerate-code', 32),
      );
      renderRecoveryCodesPage(ctx, pageSession(ctx), codes);
    });
  });
}

function sessionRoutes(router: Router, deps: RouteDeps, { signedIn, change }: Guards): void {
  const list = async (s: AccountSession) => {
    const page = await deps.apiSessionView.listOwn(
      { identityId: s.principal.identityId, sessionId: s.principal.sessionId },
      parseApiSessionList({ limit: '100' }),
    );
    return page.items;
  };

  router.get('/sessions', signedIn, async (ctx: Context) => {
    renderSessionsPage(ctx, pageSession(ctx), await list(accountOf(ctx)), { notice: noticeOf(ctx) });
  });

  router.post('/sessions/end', ...change, async (ctx) => {
    const s = accountOf(ctx);
    const id = formField(ctx, 'session', 255);
    await deps.apiSessionEnding.endOwnSession(s.principal.identityId, id);
    if (id === s.principal.sessionId) {
      // The page's own API session: the page's session is over as well.
      await deps.accountSessions.signOut(ctx.cookies.get(SESSION_COOKIE));
      setCookie(ctx, SESSION_COOKIE, null, 0, 'strict');
      return seeOther(ctx, '/account/?done=signed-out');
    }
    seeOther(ctx, '/account/sessions?done=session-ended');
  });
}
