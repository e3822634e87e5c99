import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { AppError, isAppError } from '../errors/app-error.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import type { Oidc } from '../oidc/create-oidc.js';
import {
  isDeviceLoginElsewhere,
  type LoginFlow,
  type LoginOutcome,
  type PendingLogin,
} from '../oidc/login-flow.js';
import { LOGIN_PATHS, PRIMARY_LOGIN_PATHS } from '../oidc/login-paths.js';
import { owesOnly, PASSKEY_BINDING, TOTP_BINDING } from '../oidc/factor-binding.js';
import type { OwedFactors } from '../oidc/second-factors.js';
import { mfaCodeSchema } from '../schemas/mfa-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import type { EnrollmentStart } from '../services/mfa/totp-service.js';
import { qrDataUrl } from '../services/mfa/qr-code.js';
import {
  renderEnrollmentPage,
  renderOwedPage,
  renderPasskeyPage,
  renderTotpPage,
} from './oidc-factor-pages.js';
import {
  authRequestIdOf,
  configTypesOf,
  isHtmlForm,
  sendOwed,
  setOwedHeaders,
  wantsHtml,
} from './oidc-login-http.js';
import {
  renderDeviceLoginElsewherePage,
  renderLoginPage,
  renderSessionLimitPage,
} from './oidc-login-pages.js';
import { passkeyLoginRoutes } from './passkey-login-routes.js';
import { passkeysAvailableAt, primaryLoginsFor } from './primary-logins.js';
import type { RouteDeps } from './route-deps.js';

/** Refusals a browser form gets as the same page again, with the message (and Retry-After). */
const PAGE_ERRORS = new Set(['INVALID_TOTP_CODE', 'MFA_INVALID_TOKEN', 'RATE_LIMITED', 'MFA_EXISTS']);

const codeOf = (body: Record<string, unknown>) => parseInput(mfaCodeSchema, body).code;

/** The enrollment page: the QR code of the enrollment in progress, or the start button. */
async function showEnrollment(
  ctx: Context,
  flow: LoginFlow,
  pending: PendingLogin,
  options: { start?: EnrollmentStart; status?: number; error?: string; passkey?: boolean } = {},
): Promise<void> {
  const url = options.start?.provisioningUrl ?? (await flow.enrollmentUrl(ctx, pending));
  const view = url
    ? { provisioningUrl: url, qrDataUrl: await qrDataUrl(url), recoveryCodes: options.start?.recoveryCodes }
    : {};
  renderEnrollmentPage(ctx, pending.uid, view, { ...options, device: pending.deviceUserCode });
}

/**
 * The page of what a login owes: TOTP entry (with a passkey instead, when the identity has one),
 * a passkey the policy requires or its registration, TOTP enrollment, or what only the app can send.
 */
async function showOwed(
  ctx: Context,
  flow: LoginFlow,
  pending: PendingLogin,
  owed: OwedFactors,
  options: { status?: number; error?: string } = {},
): Promise<void> {
  const mfa = owed.authQueries.find((q) => q.typeId === 'MFA');
  const page = { ...options, device: pending.deviceUserCode };
  if (mfa && PASSKEY_BINDING.matches(mfa) && mfa.isPasskeyRegistered) {
    renderPasskeyPage(ctx, pending.uid, false, page);
  } else if (owesOnly(owed, PASSKEY_BINDING)) renderPasskeyPage(ctx, pending.uid, true, page);
  else if (mfa?.isTotpEnrolled) renderTotpPage(ctx, pending.uid, { ...page, passkey: 'passkey' in mfa });
  else if (owesOnly(owed, TOTP_BINDING)) {
    await showEnrollment(ctx, flow, pending, { ...options, passkey: mfa !== undefined && 'passkey' in mfa });
  } else renderOwedPage(ctx, owed.authQueries, page);
  setOwedHeaders(ctx, owed.authQueries, owed.challenges);
}

/**
 * The one answer of a login step: `complete` — the provider has already sent its 303
 * to `redirect_uri?code&state&iss`; `owes` — 200 `{authQueries}`, or for a browser form the page
 * of what is owed (`showOwed`).
 */
async function respond(ctx: Context, flow: LoginFlow, pending: PendingLogin, outcome: LoginOutcome) {
  if (outcome.kind === 'complete') return;
  if (!isHtmlForm(ctx)) return sendOwed(ctx, outcome.authQueries, outcome.challenges);
  await showOwed(ctx, flow, pending, outcome);
}

/** A browser form refused by the session limit: answered with a page that says so (not the envelope). */
function isSessionLimitPage(ctx: Context, err: unknown): boolean {
  return isAppError(err) && err.code === 'SESSION_LIMIT_REACHED' && isHtmlForm(ctx);
}

/** Runs a form step; a refusal shown on a page is rendered by `page` instead of the JSON envelope. */
async function withPageErrors(
  ctx: Context,
  pending: PendingLogin,
  work: () => Promise<void>,
  page: (status: number, error: string) => Promise<void> | void,
): Promise<void> {
  try {
    await work();
  } catch (err) {
    // The TOTP page is the way back: after its primary step the login owes a code (again).
    if (isSessionLimitPage(ctx, err)) {
      return renderSessionLimitPage(ctx, pending.uid, LOGIN_PATHS.totp, pending.deviceUserCode);
    }
    if (!(isAppError(err) && PAGE_ERRORS.has(err.code) && isHtmlForm(ctx))) throw err;
    for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
    await page(err.status, err.message);
  }
}

/**
 * A device authorization's login step from a browser other than the one that confirmed the code:
 * a browser gets a page that says why (it may have been sent the link to sign in someone else's
 * device), anything else the envelope.
 */
async function deviceLoginElsewherePage(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
  } catch (err) {
    if (!(isDeviceLoginElsewhere(err) && wantsHtml(ctx))) throw err;
    renderDeviceLoginElsewherePage(ctx);
  }
}

/**
 * Every `/oidc/login/*` endpoint, each: load the pending
 * login, parse the input, run one step of the flow (oidc/login-flow.ts), `respond`.
 * GET with `Accept: text/html` gives the pages; other GETs answer JSON.
 */
export function oidcLoginRoutes(router: Router, deps: RouteDeps, oidc: Oidc): void {
  const flow = oidc.login;
  const primaryLogins = primaryLoginsFor(deps);
  const load = (ctx: Context, body?: Record<string, unknown>) =>
    flow.loadPendingLogin(ctx, authRequestIdOf(ctx, body));

  // Primary steps: GET shows the page (HTML for browsers, else `{authRequestId, method}`). Wrong
  // credentials: 401 INVALID_AUTH and the auth request stays usable; a browser form gets the page
  // again with the message.
  // The password page offers a passkey where a browser can use one (passkey-login-routes.ts).
  const offersPasskey = (ctx: Context, page: string) => page === 'username' && passkeysAvailableAt(deps, ctx);
  for (const { path, page, method } of PRIMARY_LOGIN_PATHS) {
    router.get(path, deviceLoginElsewherePage, async (ctx: Context) => {
      const pending = await load(ctx);
      if (wantsHtml(ctx)) {
        return renderLoginPage(ctx, page, pending.uid, {
          device: pending.deviceUserCode,
          passkey: offersPasskey(ctx, page),
        });
      }
      ctx.body = { authRequestId: pending.uid, method };
    });

    router.post(path, deviceLoginElsewherePage, parseBody(), async (ctx: Context) => {
      const body = bodyOf(ctx);
      const pending = await load(ctx, body);
      const check = Object.hasOwn(primaryLogins, method) ? primaryLogins[method] : undefined;
      if (!check) throw new AppError('NOT_FOUND', { message: `login method ${method} is not available` });
      try {
        const step = { name: method, configTypes: configTypesOf(body), check: () => check(ctx) };
        await respond(ctx, flow, pending, await flow.advance(ctx, pending, step));
      } catch (err) {
        if (isSessionLimitPage(ctx, err)) {
          return renderSessionLimitPage(ctx, pending.uid, path, pending.deviceUserCode);
        }
        if (!(isAppError(err) && err.code === 'INVALID_AUTH' && isHtmlForm(ctx))) throw err;
        renderLoginPage(ctx, page, pending.uid, {
          status: 401,
          error: 'The credentials were not accepted.',
          device: pending.deviceUserCode,
          passkey: offersPasskey(ctx, page),
          username:
            typeof body.username === 'string' && body.username.length <= 256 ? body.username : undefined,
        });
      }
    });
  }

  router.get(LOGIN_PATHS.authQueries, deviceLoginElsewherePage, async (ctx: Context) => {
    const owed = await flow.owed(await load(ctx));
    sendOwed(ctx, owed.authQueries, owed.challenges);
  });

  router.get(LOGIN_PATHS.totp, deviceLoginElsewherePage, async (ctx: Context) => {
    const pending = await load(ctx);
    const owed = await flow.owed(pending);
    if (wantsHtml(ctx)) return renderTotpPage(ctx, pending.uid, { device: pending.deviceUserCode });
    sendOwed(ctx, owed.authQueries, owed.challenges);
  });

  router.post(LOGIN_PATHS.totp, deviceLoginElsewherePage, parseBody(), async (ctx: Context) => {
    const body = bodyOf(ctx);
    const pending = await load(ctx, body);
    const step = { name: 'totp' as const, code: codeOf(body) };
    await withPageErrors(
      ctx,
      pending,
      async () => respond(ctx, flow, pending, await flow.advance(ctx, pending, step)),
      (status, error) => renderTotpPage(ctx, pending.uid, { status, error, device: pending.deviceUserCode }),
    );
  });

  // TOTP enrollment mid-flow: show, start and abandon act on the pending login; verify is a step.
  router.get(LOGIN_PATHS.totpEnroll, deviceLoginElsewherePage, async (ctx: Context) => {
    const pending = await load(ctx);
    const owed = await flow.owedForEnrollment(ctx, pending);
    if (wantsHtml(ctx)) return showEnrollment(ctx, flow, pending);
    sendOwed(ctx, owed.authQueries, owed.challenges);
  });

  router.post(LOGIN_PATHS.totpEnroll, deviceLoginElsewherePage, parseBody(), async (ctx: Context) => {
    const pending = await load(ctx, bodyOf(ctx));
    await withPageErrors(
      ctx,
      pending,
      async () => {
        const start = await flow.startEnrollment(ctx, pending);
        if (isHtmlForm(ctx)) return showEnrollment(ctx, flow, pending, { start, status: 201 });
        ctx.status = 201; // the enrollment body, as it is
        ctx.body = start;
      },
      (status, error) => showEnrollment(ctx, flow, pending, { status, error }),
    );
  });

  router.delete(LOGIN_PATHS.totpEnroll, deviceLoginElsewherePage, parseBody(), async (ctx: Context) => {
    await flow.abandonEnrollment(ctx, await load(ctx, bodyOf(ctx)));
    ctx.status = 200;
    ctx.body = {};
  });

  router.post(LOGIN_PATHS.totpEnrollVerify, deviceLoginElsewherePage, parseBody(), async (ctx: Context) => {
    const body = bodyOf(ctx);
    const pending = await load(ctx, body);
    const step = { name: 'totp-enroll-verify' as const, code: codeOf(body) };
    await withPageErrors(
      ctx,
      pending,
      async () => respond(ctx, flow, pending, await flow.advance(ctx, pending, step)),
      (status, error) => showEnrollment(ctx, flow, pending, { status, error }),
    );
  });

  passkeyLoginRoutes(router, deps, { flow, load, respond, showOwed, deviceGuard: deviceLoginElsewherePage });
}
