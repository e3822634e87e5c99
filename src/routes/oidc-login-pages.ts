import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { LOGIN_PATHS } from '../oidc/login-paths.js';
import { scriptSourceFor } from './script-source.js';

/**
 * The look of every login page: one column that fits a phone (inputs at 1rem so that mobile
 * browsers do not zoom on focus), a visible keyboard focus, and nothing loaded from anywhere.
 */
export const LOGIN_STYLE = `
*{box-sizing:border-box}
body{font:1rem/1.5 system-ui,sans-serif;color:#1a1a1a;background:#fff;margin:0}
main{max-width:26rem;margin:0 auto;padding:2rem 1rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 1rem}
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
label{display:block;font-weight:600;margin:1rem 0 .25rem}
input{display:block;width:100%;font:inherit;padding:.5rem;border:1px solid #6b6b6b;border-radius:4px}
input[aria-invalid=true]{border:2px solid #b00020}
.hint{margin:.25rem 0 .4rem;color:#4a4a4a;font-size:.9rem}
button{display:block;width:100%;font:inherit;font-weight:600;margin-top:1.5rem;padding:.65rem 1rem;border:0;border-radius:4px;background:#1f4fbf;color:#fff;cursor:pointer}
:focus-visible{outline:3px solid #1f4fbf;outline-offset:2px}
button:focus-visible{outline-color:#0b2a6f}
button.secondary{background:#fff;color:#1f4fbf;border:2px solid #1f4fbf;margin-top:.75rem}
.usercode{font:600 1.5rem/1.2 ui-monospace,monospace;letter-spacing:.1em}
.device{border-left:4px solid #1f4fbf;padding:.25rem .75rem;margin:0 0 1rem}
.error{color:#b00020;border-left:4px solid #b00020;padding:.25rem .75rem;margin:0 0 1rem}
img.qr{display:block;margin:1rem auto;width:16rem;max-width:100%;height:auto;image-rendering:pixelated}
code{font-size:1rem;overflow-wrap:anywhere}
ul.codes{columns:2;padding-left:1.25rem}
`;

/**
 * Login pages are never framed (clickjacking, RFC 6819 §4.4.1.9): the one inline stylesheet is
 * allowed by its hash, images only as inline `data:` (the QR code and the empty favicon, which
 * spares the browser a request that would end in 404). No `form-action`: browsers apply it to the
 * redirects that follow a post, and the last one goes to the client. They run no script, except
 * a page that offers a passkey: it may run exactly the controller's passkey script (by its URL)
 * and fetch the ceremony's options from its own origin.
 */
const CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(LOGIN_STYLE).digest('base64')}'`,
  'img-src data:',
  "frame-ancestors 'none'",
  "base-uri 'none'",
];

function cspOf(ctx: Context, withPasskey: boolean): string {
  const script = withPasskey ? scriptSourceFor(ctx, LOGIN_PATHS.passkeyScript) : undefined;
  if (!script) return CSP.join('; ');
  return [...CSP, `script-src ${script}`, "connect-src 'self'"].join('; ');
}

/**
 * A form for the passkey script (routes/login-passkey-script.ts): hidden until the script shows it, so
 * a browser without script (or without passkeys) sees only what works without them.
 */
export function passkeyForm(p: {
  kind: 'get' | 'create';
  authRequestId: string;
  action: string;
  optionsUrl: string;
  button: string;
  intro?: string;
}): string {
  return `<form method="post" action="${escapeHtml(p.action)}" data-passkey="${p.kind}" data-options="${escapeHtml(p.optionsUrl)}" hidden>
${hiddenId(p.authRequestId)}<input type="hidden" name="passkey" value="">
${p.intro ? `<p>${escapeHtml(p.intro)}</p>` : ''}<p class="error" role="alert" data-passkey-status hidden></p>
<button type="submit"${p.kind === 'get' && !p.intro ? ' class="secondary"' : ''}>${escapeHtml(p.button)}</button></form>`;
}

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The id of the error message that the fields it concerns point to with `aria-describedby`. */
export const ERROR_ID = 'form-error';

function page(title: string, body: string, error?: string, withPasskey = false): string {
  // A screen reader announces the title first: with an error, the title says so (WCAG G199-style).
  const fullTitle = error ? `Error: ${title}` : title;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(fullTitle)}</title>
<link rel="icon" href="data:,">
<style>${LOGIN_STYLE}</style>
${withPasskey ? `<script src="${LOGIN_PATHS.passkeyScript}" defer></script>\n` : ''}</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>`;
}

export const errorLine = (error?: string) =>
  error ? `<p id="${ERROR_ID}" class="error" role="alert">${escapeHtml(error)}</p>` : '';

export interface FieldOptions {
  id: string;
  label: string;
  type?: 'text' | 'password';
  autocomplete: string;
  /** Shown under the label and announced with the field. */
  hint?: string;
  /** Marks the field invalid and ties the page's error message to it. */
  invalid?: boolean;
  value?: string;
  autofocus?: boolean;
  /** Further attributes, already escaped (inputmode, pattern, maxlength …). */
  attributes?: string;
}

/** A labelled input; its hint and, when invalid, the error message are its accessible description. */
export function field(o: FieldOptions): string {
  const hintId = `${o.id}-hint`;
  const describedBy = [o.invalid ? ERROR_ID : undefined, o.hint ? hintId : undefined].filter(Boolean);
  const attrs = [
    `id="${o.id}"`,
    `name="${o.id}"`,
    o.type ? `type="${o.type}"` : '',
    `autocomplete="${o.autocomplete}"`,
    o.value !== undefined ? `value="${escapeHtml(o.value)}"` : '',
    'required',
    o.invalid ? 'aria-invalid="true"' : '',
    describedBy.length > 0 ? `aria-describedby="${describedBy.join(' ')}"` : '',
    o.attributes ?? '',
    o.autofocus ? 'autofocus' : '',
  ].filter(Boolean);
  const hint = o.hint ? `<p id="${hintId}" class="hint">${escapeHtml(o.hint)}</p>` : '';
  return `<label for="${o.id}">${escapeHtml(o.label)}</label>${hint}<input ${attrs.join(' ')}>`;
}

const hiddenId = (authRequestId: string) =>
  `<input type="hidden" name="authRequestId" value="${escapeHtml(authRequestId)}">`;

/** A form posting `inner` fields and the auth request id to `action`. */
export const formHtml = (action: string, authRequestId: string, inner: string, button: string) =>
  `<form method="post" action="${escapeHtml(action)}">${hiddenId(authRequestId)}${inner}<button type="submit">${button}</button></form>`;

export type LoginPage = 'username' | 'cert' | 'ext-jwt';

export interface LoginPageOptions extends SendPageOptions {
  /** The username of a refused attempt, kept so that only the password needs typing again. */
  username?: string;
}

/** The password page's offer of a passwordless sign-in (an extension beyond the specification). */
const passwordlessOffer = (authRequestId: string) =>
  passkeyForm({
    kind: 'get',
    authRequestId,
    action: LOGIN_PATHS.passkey,
    optionsUrl: `${LOGIN_PATHS.passkey}?authRequestID=${encodeURIComponent(authRequestId)}`,
    button: 'Sign in with a passkey',
  });

function pageBody(
  kind: LoginPage,
  authRequestId: string,
  action: string,
  o: LoginPageOptions,
): [string, string] {
  const form = (inner: string, button: string) => formHtml(action, authRequestId, inner, button);
  const invalid = o.error !== undefined;
  if (kind === 'username') {
    return [
      'Sign in',
      errorLine(o.error) +
        form(
          field({
            id: 'username',
            label: 'Username',
            autocomplete: 'username',
            value: o.username,
            invalid,
            autofocus: !invalid || !o.username,
            attributes: 'autocapitalize="none" spellcheck="false"',
          }) +
            field({
              id: 'password',
              type: 'password',
              label: 'Password',
              autocomplete: 'current-password',
              invalid,
              autofocus: invalid && !!o.username,
            }),
          'Sign in',
        ) +
        (o.passkey ? passwordlessOffer(authRequestId) : ''),
    ];
  }
  if (kind === 'cert') {
    return [
      'Sign in with a certificate',
      errorLine(o.error) +
        `<p>Your browser presents the client certificate of your identity during the TLS handshake; the
certificate must come from this service's PKI or from a registered 3rd-party CA.</p>` +
        form('', 'Continue with my certificate'),
    ];
  }
  return [
    'Sign in with an external JWT',
    errorLine(o.error) +
      `<p>Send <code>POST ${escapeHtml(action)}</code> with the header
<code>Authorization: Bearer &lt;JWT of your identity provider&gt;</code> and the body
<code>{"authRequestId":"${escapeHtml(authRequestId)}"}</code>. A browser cannot add that header by itself:
use the application that started this sign-in.</p>`,
  ];
}

export interface SendPageOptions {
  status?: number;
  error?: string;
  /** The page holds a passkey form (`passkeyForm`): it loads the passkey script. */
  passkey?: boolean;
  /**
   * The code of the device a device authorization's login signs in (`XXXX-XXXX`): every page of
   * that login names it, so that nobody signs in a device without its code in front of them.
   */
  device?: string;
}

/** The line above every page of a device's login. */
const deviceLine = (code: string) =>
  `<p class="device">Signing in the device showing <span class="usercode">${escapeHtml(code)}</span>.
Continue only if you entered this code yourself and your device shows it.</p>\n`;

/** Sends a complete page with the login pages' CSP; `error` also goes into the title. */
export function sendPage(ctx: Context, title: string, body: string, options: SendPageOptions = {}): void {
  ctx.status = options.status ?? 200;
  const withPasskey = options.passkey === true;
  ctx.set('content-security-policy', cspOf(ctx, withPasskey));
  ctx.type = 'html';
  ctx.body = page(
    title,
    (options.device ? deviceLine(options.device) : '') + body,
    options.error,
    withPasskey,
  );
}

/** A usable HTML login page that posts back to the same URL as a form. */
export function renderLoginPage(
  ctx: Context,
  kind: LoginPage,
  authRequestId: string,
  options: LoginPageOptions = {},
): void {
  const [title, body] = pageBody(kind, authRequestId, ctx.path, options);
  sendPage(ctx, title, body, options);
}

/** After end_session without a redirect target, for browsers. */
export function renderSignedOutPage(ctx: Context): void {
  sendPage(ctx, 'Signed out', '<p>You are signed out. You may close this window.</p>');
}

/**
 * A browser login refused by the session limit of its policy (403 SESSION_LIMIT_REACHED). The auth
 * request stays usable: `retryPath` shows the step again once a session has ended.
 */
export function renderSessionLimitPage(
  ctx: Context,
  authRequestId: string,
  retryPath: string,
  device?: string,
): void {
  const retry = `${retryPath}?authRequestID=${encodeURIComponent(authRequestId)}`;
  sendPage(
    ctx,
    'Too many sessions',
    `${errorLine('Your account already has as many active sessions as its policy allows, so this sign-in was not completed.')}
<p>Sign out of a session you no longer need (on another device or in another application), then try again.</p>
<p><a href="${escapeHtml(retry)}">Try again</a></p>`,
    { status: 403, error: 'session limit reached', device },
  );
}

/**
 * A device's login step from a browser other than the one that confirmed the device's code
 * (400 INVALID_AUTH_REQUEST). A person who was sent such a link may be the target of someone
 * trying to have them sign in their device: the page says so and offers no sign-in.
 */
export function renderDeviceLoginElsewherePage(ctx: Context): void {
  sendPage(
    ctx,
    'Sign-in not available here',
    `${errorLine('This sign-in of a device can only be continued in the browser where the device’s code was entered.')}
<p>If you want to sign in a device, enter the code it shows on this service’s device page yourself.
If someone sent you this link, do not sign in: they may be trying to have you sign in their device.</p>`,
    { status: 400, error: 'device sign-in started in another browser' },
  );
}
