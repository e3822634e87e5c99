import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import { isAppError } from '../errors/app-error.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import type { LoginFlow, LoginOutcome, LoginStep, PendingLogin } from '../oidc/login-flow.js';
import { LOGIN_PATHS } from '../oidc/login-paths.js';
import type { OwedFactors } from '../oidc/second-factors.js';
import { passkeyAssertionSchema, passkeyLoginRegisterSchema } from '../schemas/passkey-login-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import { configTypesOf, isHtmlForm, wantsHtml } from './oidc-login-http.js';
import { renderLoginPage, renderSessionLimitPage } from './oidc-login-pages.js';
import { servePasskeyScript } from './login-passkey-script.js';
import { passkeyLoginFor, passkeysAvailableAt } from './primary-logins.js';
import type { RouteDeps } from './route-deps.js';

/** What the login routes share with these (routes/oidc-login-routes.ts). */
export interface LoginRouteParts {
  flow: LoginFlow;
  load: (ctx: Context, body?: Record<string, unknown>) => Promise<PendingLogin>;
  respond: (ctx: Context, flow: LoginFlow, pending: PendingLogin, outcome: LoginOutcome) => Promise<void>;
  showOwed: (
    ctx: Context,
    flow: LoginFlow,
    pending: PendingLogin,
    owed: OwedFactors,
    options: { status?: number; error?: string },
  ) => Promise<void>;
  /** Middleware: a device's login in another browser gets a page that says so. */
  deviceGuard: (ctx: Context, next: Next) => Promise<void>;
}

/** Refusals a browser form gets as a page again, with the message (and Retry-After). */
const PAGE_ERRORS = new Set([
  'INVALID_AUTH',
  'RATE_LIMITED',
  'PASSKEYS_UNAVAILABLE',
  'PASSKEY_REGISTRATION_FAILED',
  'INVALID_AUTH_REQUEST',
]);

const PAGE_MESSAGES: Record<string, string> = {
  INVALID_AUTH: 'The passkey was not accepted.',
  PASSKEY_REGISTRATION_FAILED: 'The passkey could not be set up. Try again.',
};

/**
 * The passkey endpoints of the OIDC login (an extension beyond the specification):
 *
 *   GET  passkey            request options: passwordless before the primary step, else the
 *                           identity's passkeys (a browser gets the sign-in page instead)
 *   POST passkey            the assertion: the primary step (passwordless), or the second factor
 *   GET  passkey/register   creation options, when a required passkey is all the login owes
 *   POST passkey/register   the new credential: registered, and the factor paid
 *   GET  passkey.js         the login pages' script
 */
export function passkeyLoginRoutes(router: Router, deps: RouteDeps, parts: LoginRouteParts): void {
  const { flow, load, respond, showOwed, deviceGuard } = parts;
  const passkeyLogin = passkeyLoginFor(deps);

  router.get(LOGIN_PATHS.passkeyScript, servePasskeyScript);

  /** A browser form's refusal: the page it came from again, with the message. */
  async function withPageErrors(ctx: Context, pending: PendingLogin, work: () => Promise<void>) {
    try {
      await work();
    } catch (err) {
      if (!isHtmlForm(ctx)) throw err;
      if (isAppError(err) && err.code === 'SESSION_LIMIT_REACHED') {
        return renderSessionLimitPage(ctx, pending.uid, LOGIN_PATHS.username, pending.deviceUserCode);
      }
      if (!(isAppError(err) && PAGE_ERRORS.has(err.code))) throw err;
      for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
      const options = { status: err.status, error: PAGE_MESSAGES[err.code] ?? err.message };
      if (!pending.state) {
        return renderLoginPage(ctx, 'username', pending.uid, {
          ...options,
          device: pending.deviceUserCode,
          passkey: passkeysAvailableAt(deps, ctx),
        });
      }
      await showOwed(ctx, flow, pending, await flow.owed(pending), options);
    }
  }

  router.get(LOGIN_PATHS.passkey, deviceGuard, async (ctx: Context) => {
    const pending = await load(ctx);
    if (wantsHtml(ctx)) {
      // The `method=passkey` hint lands here: the sign-in page, with the passkey offered first.
      if (!pending.state) {
        return renderLoginPage(ctx, 'username', pending.uid, {
          device: pending.deviceUserCode,
          passkey: passkeysAvailableAt(deps, ctx),
        });
      }
      return showOwed(ctx, flow, pending, await flow.owed(pending), {});
    }
    ctx.body = await flow.passkeyRequestOptions(ctx, pending);
  });

  router.post(LOGIN_PATHS.passkey, deviceGuard, parseBody(), async (ctx: Context) => {
    const body = bodyOf(ctx);
    const pending = await load(ctx, body);
    await withPageErrors(ctx, pending, async () => {
      const { passkey } = parseInput(passkeyAssertionSchema, body);
      // Before a primary step the assertion is the primary login; after it, the second factor.
      const step: LoginStep = pending.state
        ? { name: 'passkey-assertion', response: passkey }
        : {
            name: 'passkey',
            configTypes: configTypesOf(body),
            check: () => passkeyLogin(ctx, pending.uid, passkey),
          };
      await respond(ctx, flow, pending, await flow.advance(ctx, pending, step));
    });
  });

  router.get(LOGIN_PATHS.passkeyRegister, deviceGuard, async (ctx: Context) => {
    const pending = await load(ctx);
    if (wantsHtml(ctx)) return showOwed(ctx, flow, pending, await flow.owed(pending), {});
    ctx.body = await flow.passkeyRegistrationOptions(ctx, pending);
  });

  router.post(LOGIN_PATHS.passkeyRegister, deviceGuard, parseBody(), async (ctx: Context) => {
    const body = bodyOf(ctx);
    const pending = await load(ctx, body);
    await withPageErrors(ctx, pending, async () => {
      const input = parseInput(passkeyLoginRegisterSchema, body);
      const step: LoginStep = { name: 'passkey-register', passkeyName: input.name, response: input.passkey };
      await respond(ctx, flow, pending, await flow.advance(ctx, pending, step));
    });
  });
}
