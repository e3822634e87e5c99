import type { Context, Next } from 'koa';
import { AppError } from '../errors/app-error.js';
import { parseBody } from '../middleware/parse-body.js';
import type { AccountSession, AccountSessionService } from '../services/account/account-session-service.js';
import { renderAccountErrorPage } from './account-pages.js';

/** The session cookie: this host only (`__Host-`), never sent along from another site. */
export const SESSION_COOKIE = '__Host-svc-account';
/**
 * The sign-in in flight: `Lax`, the one cookie that must come back with the top-level navigation
 * that returns from the login pages to the callback.
 */
export const LOGIN_COOKIE = '__Host-svc-account-login';
/** The header the page's script sends its CSRF token in (forms send the `csrf` field). */
export const CSRF_HEADER = 'x-csrf-token';

export function setCookie(
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

export const seeOther = (ctx: Context, location: string) => {
  ctx.status = 303;
  ctx.redirect(location);
};

export function accountOf(ctx: Context): AccountSession {
  const session = ctx.state.account as AccountSession | undefined;
  if (!session) throw new AppError('ACCOUNT_SIGN_IN_REQUIRED');
  return session;
}

export const pageSession = (ctx: Context) => ({ csrfToken: accountOf(ctx).csrfToken });

/** A `done` query value as the confirmation it stands for; anything else shows nothing. */
export function noticeFrom(ctx: Context, notices: Record<string, string>): string | undefined {
  const done = ctx.query.done;
  return typeof done === 'string' && Object.hasOwn(notices, done) ? notices[done] : undefined;
}

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

/** A required text field of a form. */
export function formField(ctx: Context, name: string, maxLength = 256): string {
  const body = (ctx.request.body ?? {}) as Record<string, unknown>;
  const value = body[name];
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    throw new AppError('COULD_NOT_VALIDATE', { cause: { field: name, reason: 'is required' } });
  }
  return value;
}

export type Guard = (ctx: Context, next: Next) => Promise<unknown>;

/**
 * `signedIn` for pages (a GET without a session goes to the sign-in page), `change` for every form
 * POST, `changeJson` for the script's fetches (the token in a header, errors in the API envelope).
 */
export interface Guards {
  loadSession(ctx: Context): Promise<AccountSession | undefined>;
  signedIn: Guard;
  change: Guard[];
  changeJson: Guard[];
}

export function createGuards(accountSessions: AccountSessionService): Guards {
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
  const sameOrigin = async (ctx: Context, next: Next) => {
    checkOrigin(ctx);
    return next();
  };
  const token = (read: (ctx: Context) => unknown) => async (ctx: Context, next: Next) => {
    accountSessions.checkCsrf(accountOf(ctx), read(ctx));
    return next();
  };
  const json = async (ctx: Context, next: Next) => {
    ctx.state.accountJson = true;
    return next();
  };
  return {
    loadSession,
    signedIn,
    change: [
      sameOrigin,
      parseBody(),
      signedIn,
      token((ctx) => (ctx.request.body as Record<string, unknown> | undefined)?.csrf),
    ],
    changeJson: [json, sameOrigin, parseBody(), signedIn, token((ctx) => ctx.get(CSRF_HEADER) || undefined)],
  };
}

/**
 * Every refusal is a page of the account page (the script's fetches get the API envelope), never
 * a 5xx for input; a page that needs a session sends a browser without one to the sign-in.
 */
export async function accountErrors(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500 || ctx.state.accountJson) throw err;
    if (err.code === 'ACCOUNT_SIGN_IN_REQUIRED' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      return seeOther(ctx, '/account/');
    }
    for (const [name, value] of Object.entries(err.headers ?? {})) ctx.set(name, value);
    const session = ctx.state.account as AccountSession | undefined;
    renderAccountErrorPage(ctx, err.status, err.message, session && { csrfToken: session.csrfToken });
  }
}
