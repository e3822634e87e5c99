import type { IncomingMessage } from 'node:http';
import type { Configuration, CookiesSetOptions, KoaContextWithOIDC } from 'oidc-provider';
import type { AuditTrail } from '../services/audit-trail.js';
import { currentRequestScope } from '../services/request-scope.js';
import { OIDC_MOUNT } from './login-paths.js';

/** How long a device code can be confirmed and polled (RFC 8628 §3.2 `expires_in`). */
export const DEVICE_CODE_SECONDS = 600;
/** The poll interval advertised (§3.2 `interval`), and where every device code's interval starts. */
export const POLL_INTERVAL_SECONDS = 5;
/** How much earlier than its interval a poll may come before it counts as too early (network jitter). */
export const POLL_JITTER_SECONDS = 1;
/** What each `slow_down` adds to the interval (§3.5). */
export const SLOW_DOWN_STEP_SECONDS = 5;
/** The provider's session behind the code form (it holds only the form's XSRF secret). */
export const CODE_FORM_SESSION_SECONDS = 600;
/** 8 characters of the 20 consonants `BCDFGHJKLMNPQRSTVWXZ`, shown `XXXX-XXXX` (§6.1). */
const USER_CODE_MASK = '****-****';

/** The provider's route names of the person's side of the flow. */
export const CODE_VERIFICATION_ROUTE = 'code_verification';
export const DEVICE_RESUME_ROUTE = 'device_resume';
/** The code form's path: the only one the provider's session cookie is sent to (and let through). */
export const CODE_FORM_COOKIE_PATH = `${OIDC_MOUNT}/device`;

/** What the code form and the pages after it show; rendered by the route layer. */
export interface CodeForm {
  /** Where the form posts (the issuer's `/oidc/device`). */
  action: string;
  /** The provider's XSRF secret of this form, kept in its session. */
  xsrf: string;
  /** The code as typed, or as `verification_uri_complete` carried it. */
  userCode?: string;
  /** The code came with the link (`verification_uri_complete`): the person checks it, then continues. */
  fromLink?: boolean;
  error?: string;
  status?: number;
}

export interface ConfirmForm {
  action: string;
  xsrf: string;
  /** The code as the device shows it (`XXXX-XXXX`). */
  userCode: string;
  /** The address the device asked from, when known. */
  deviceAddress?: string;
  /** The device asks for a refresh token (`offline_access`): it stays signed in (when known). */
  staysSignedIn: boolean;
}

export type DeviceResult = 'signed-in' | 'declined';

/** The pages of the person's side, in the login pages' look (src/routes). */
export interface DevicePages {
  codeForm(ctx: KoaContextWithOIDC, form: CodeForm): void;
  confirm(ctx: KoaContextWithOIDC, form: ConfirmForm): void;
  result(ctx: KoaContextWithOIDC, result: DeviceResult): void;
}

/** Wrong user codes, counted per client address (RFC 8628 §5.1) by the code form's gate. */
export interface UserCodeGuesses {
  /** The code this request posted names no device code: its point stays spent. */
  wrong(req: IncomingMessage): void;
}

export interface DeviceFlowDeps {
  pages: DevicePages;
  guesses: UserCodeGuesses;
  audit: AuditTrail;
}

/**
 * `GET /oidc/device?user_code=…` (`verification_uri_complete`): the provider would answer it with
 * a page that posts itself by script. The dispatcher takes the code out of the query and keeps it
 * here, per request, for the code form to show it prefilled instead.
 */
const prefilled = new WeakMap<IncomingMessage, string>();

export function prefillUserCode(req: IncomingMessage, userCode: string): void {
  prefilled.set(req, userCode.slice(0, 64));
}

/**
 * A code as the device shows it (`XXXX-XXXX`), from what a link or a cookie carried: upper case,
 * without anything but its letters (as the provider compares codes); undefined unless 8 of our
 * letters.
 */
export function shownUserCode(code: string): string | undefined {
  const letters = code.toUpperCase().replace(/[^A-Z]/g, '');
  return /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/.test(letters)
    ? `${letters.slice(0, 4)}-${letters.slice(4)}`
    : undefined;
}

const secretOf = (ctx: KoaContextWithOIDC): string =>
  (ctx.oidc.session?.state as { secret?: string } | undefined)?.secret ?? '';

/** The message of a code the provider refused (its re-render errors, by class name). */
function codeError(err: Error | undefined): { error: string; status: number } | undefined {
  if (!err) return undefined;
  switch (err.name) {
    case 'NoCodeError':
      return { error: 'Enter the code your device shows.', status: 400 };
    case 'NotFoundError':
      return { error: 'No sign-in is waiting for that code. Check the code on your device.', status: 400 };
    case 'ExpiredError':
      return { error: 'That code has expired. Start the sign-in on your device again.', status: 400 };
    case 'AlreadyUsedError':
      return { error: 'That code has already been used.', status: 400 };
    default:
      return { error: 'This form has expired. Enter the code again.', status: 400 };
  }
}

const sourceAddress = () => currentRequestScope()?.sourceAddress();

/**
 * A post of the code form that found no stored session (no cookie, a forged or an expired one)
 * is shown the form again with a new secret, in a session the provider has just made: it would
 * neither store that session (it persists only sessions it loaded) nor set its cookie, and the
 * next post would fail the same way. The session gets the form's lifetime and its cookie here.
 */
function keepNewFormSession(ctx: KoaContextWithOIDC): void {
  const session = ctx.oidc.session as unknown as { exp?: number; id: string } | undefined;
  if (ctx.oidc.route !== CODE_VERIFICATION_ROUTE || !session || typeof session.exp === 'number') return;
  session.exp = Math.floor(Date.now() / 1000) + CODE_FORM_SESSION_SECONDS;
  // The provider's session cookie options (`cookies.long`), with the form's lifetime (`cookies`
  // takes `expires`, which the provider's type leaves out).
  const options = {
    httpOnly: true,
    sameSite: 'lax',
    path: CODE_FORM_COOKIE_PATH,
    expires: new Date(session.exp * 1000),
  };
  ctx.oidc.cookies.set(ctx.oidc.provider.cookieName('session'), session.id, options as CookiesSetOptions);
}

/**
 * oidc-provider's device flow (RFC 8628) on our pages: the code form, its confirmation naming the
 * code, then the normal login steps, then a result page. No page of the provider's is shown (they
 * load fonts from elsewhere and run inline script).
 */
export function deviceFlowFeature(deps: DeviceFlowDeps) {
  const { pages, guesses, audit } = deps;
  const feature = {
    enabled: true,
    charset: 'base-20',
    mask: USER_CODE_MASK,
    // The device's address as our request log and audit events see it (PROXY protocol included),
    // and the issuer it asked: its tokens and refreshes are that issuer's, whatever host the
    // person typed the code at (`deviceIssuerOf`).
    deviceInfo: (ctx: KoaContextWithOIDC) => ({ ip: sourceAddress() ?? ctx.ip, issuer: ctx.oidc.issuer }),
    async userCodeInputSource(
      ctx: KoaContextWithOIDC,
      _form: string,
      _out?: unknown,
      err?: Error & { cause?: unknown },
    ) {
      const action = ctx.oidc.urlFor(CODE_VERIFICATION_ROUTE);
      if (err) keepNewFormSession(ctx);
      if (err?.name === 'AbortedError') {
        // Declined on the confirmation page, or refused after the login (the identity went away).
        if (err.cause === undefined) {
          await audit.storeAlone({ event: 'oidc.device.declined' });
          return pages.result(ctx, 'declined');
        }
        return pages.codeForm(ctx, {
          action,
          xsrf: secretOf(ctx),
          error: 'The sign-in could not be completed. Start it on your device again.',
          status: 400,
        });
      }
      if (err?.name === 'NotFoundError') {
        // Counted per address network and minute: a guessing run costs rows per minute, not per code.
        await audit.storeAttempt({ event: 'oidc.device.user-code-wrong', outcome: 'failure' });
        guesses.wrong(ctx.req);
      }
      // `verification_uri_complete`: the code form, prefilled. Its post looks the code up (where
      // wrong codes are counted) and shows the confirmation every typed code gets, with the
      // device's address and whether it stays signed in. A lookup on GET would tell which codes
      // exist; a confirmation before the lookup could tell neither.
      const link = prefilled.get(ctx.req);
      const fromLink = !err && link !== undefined;
      const userCode =
        (err as { userCode?: string } | undefined)?.userCode ??
        (link === undefined ? undefined : (shownUserCode(link) ?? link));
      pages.codeForm(ctx, { action, xsrf: secretOf(ctx), userCode, fromLink, ...codeError(err) });
    },
    async userCodeConfirmSource(
      ctx: KoaContextWithOIDC,
      _form: string,
      _client: unknown,
      deviceInfo: { ip?: unknown } | undefined,
      userCode: string,
    ) {
      const scope = ctx.oidc.entities.DeviceCode?.params?.scope;
      pages.confirm(ctx, {
        action: ctx.oidc.urlFor(CODE_VERIFICATION_ROUTE),
        xsrf: secretOf(ctx),
        userCode,
        deviceAddress: typeof deviceInfo?.ip === 'string' ? deviceInfo.ip : undefined,
        staysSignedIn: typeof scope === 'string' && scope.split(' ').includes('offline_access'),
      });
    },
    async successSource(ctx: KoaContextWithOIDC) {
      await audit.storeAlone({ event: 'oidc.device.confirmed', identityId: ctx.oidc.session?.accountId });
      pages.result(ctx, 'signed-in');
    },
  };
  return feature as unknown as NonNullable<NonNullable<Configuration['features']>['deviceFlow']>;
}

/**
 * The issuer a device asked for its code, when the login finishing on this request is for a
 * device: the login's facts name it, so that the device's refresh tokens are redeemed there.
 */
export function deviceIssuerOf(ctx: KoaContextWithOIDC): string | undefined {
  const issuer = (ctx.oidc.deviceCode?.deviceInfo as { issuer?: unknown } | undefined)?.issuer;
  return typeof issuer === 'string' ? issuer : undefined;
}

/**
 * The device authorization response gets the `interval` the provider leaves out (RFC 8628 §3.2:
 * without it clients wait 5 s, which is ours anyway), and each issued device code an audit event.
 */
export function deviceAuthorizationResponse(audit: AuditTrail) {
  return async function addPollInterval(ctx: KoaContextWithOIDC, next: () => Promise<void>) {
    await next();
    if (!Object.hasOwn(ctx, 'oidc') || ctx.oidc.route !== 'device_authorization' || ctx.status !== 200)
      return;
    const body = ctx.body as Record<string, unknown> | undefined;
    if (!body || typeof body !== 'object' || typeof body.device_code !== 'string') return;
    if (body.interval === undefined) body.interval = POLL_INTERVAL_SECONDS;
    await audit.storeAlone({ event: 'oidc.device.authorization' });
  };
}
