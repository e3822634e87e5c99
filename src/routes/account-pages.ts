import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import type { OwnApiSessionView } from '../schemas/session-views.js';
import { errorLine, escapeHtml, field, LOGIN_STYLE } from './oidc-login-pages.js';
import { scriptSourceFor } from './script-source.js';

/** The login pages' look, and what the account page adds: navigation, facts, lists of items. */
const STYLE = `${LOGIN_STYLE}
a{color:#1f4fbf}
nav ul{list-style:none;padding:0;margin:0 0 1.5rem;display:flex;flex-wrap:wrap;gap:.25rem 1.25rem}
nav a[aria-current=page]{font-weight:700;color:#1a1a1a}
dl.facts{display:grid;grid-template-columns:auto 1fr;gap:.25rem 1rem;margin:0 0 1rem}
dl.facts dt{font-weight:600}
dl.facts dd{margin:0;overflow-wrap:anywhere}
ul.items{list-style:none;padding:0;margin:0}
ul.items>li{border:1px solid #c4c4c4;border-radius:4px;padding:.75rem;margin:0 0 .75rem}
ul.items dl.facts{margin:0}
ul.items h2{margin-top:0}
.notice{border-left:4px solid #1b6e2a;padding:.25rem .75rem;margin:0 0 1rem}
form.signout{margin-top:2rem}
.vh{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
`;

/** The one script of the account page (the passkey ceremony), served by the controller itself. */
export const ACCOUNT_SCRIPT_PATH = '/account/passkeys.js';

const styleHash = createHash('sha256').update(STYLE).digest('base64');

/**
 * No framing, nothing from elsewhere: the stylesheet by its hash, images only inline (the QR
 * code), forms and fetches to this origin only, and a script only on the page that needs it, and
 * then only the one file (by its URL, not any same-origin script; none at a Host unfit for the header).
 */
function cspFor(ctx: Context, withScript: boolean): string {
  const script = withScript ? scriptSourceFor(ctx, ACCOUNT_SCRIPT_PATH) : undefined;
  return [
    "default-src 'none'",
    `style-src 'sha256-${styleHash}'`,
    'img-src data:',
    script ? `script-src ${script}` : '',
    script ? "connect-src 'self'" : '',
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ]
    .filter(Boolean)
    .join('; ');
}

/** What every signed-in page needs to know of its session. */
export interface PageSession {
  csrfToken: string;
}

export interface AccountPageOptions {
  status?: number;
  error?: string;
  /** A confirmation above the content (after a change). */
  notice?: string;
  /** The signed-in navigation, marking the current page, and the sign-out form. */
  session?: PageSession;
  current?: NavKey;
  /** Loads the account page's script (the passkeys page). */
  script?: boolean;
}

export type NavKey = 'overview' | 'totp' | 'sessions' | 'passkeys';

const NAV: [NavKey, string, string][] = [
  ['overview', '/account/', 'Overview'],
  ['totp', '/account/totp', 'Authenticator app'],
  ['sessions', '/account/sessions', 'Sessions'],
  ['passkeys', '/account/passkeys', 'Passkeys'],
];

const csrfInput = (s: PageSession) => `<input type="hidden" name="csrf" value="${escapeHtml(s.csrfToken)}">`;

/** A form that posts to `action` with the CSRF token and any hidden fields. */
export function postForm(
  s: PageSession,
  action: string,
  inner: string,
  button: string,
  o: { secondary?: boolean; hidden?: Record<string, string>; className?: string } = {},
): string {
  const hidden = Object.entries(o.hidden ?? {})
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
    .join('');
  const cls = o.className ? ` class="${o.className}"` : '';
  const btnClass = o.secondary ? ' class="secondary"' : '';
  return `<form method="post" action="${escapeHtml(action)}"${cls}>${csrfInput(s)}${hidden}${inner}<button type="submit"${btnClass}>${button}</button></form>`;
}

function nav(current: NavKey | undefined): string {
  const items = NAV.map(([key, href, label]) => {
    const mark = key === current ? ' aria-current="page"' : '';
    return `<li><a href="${href}"${mark}>${escapeHtml(label)}</a></li>`;
  }).join('');
  return `<nav aria-label="Account"><ul>${items}</ul></nav>`;
}

/** Sends a complete account page with its CSP; `error` also goes into the title. */
export function sendAccountPage(ctx: Context, title: string, body: string, o: AccountPageOptions = {}): void {
  const fullTitle = o.error ? `Error: ${title}` : title;
  const notice = o.notice ? `<p class="notice" role="status">${escapeHtml(o.notice)}</p>` : '';
  const signedIn = o.session
    ? {
        top: nav(o.current),
        bottom: postForm(o.session, '/account/logout', '', 'Sign out', {
          secondary: true,
          className: 'signout',
        }),
      }
    : { top: '', bottom: '' };
  const script = o.script ? `<script src="${ACCOUNT_SCRIPT_PATH}" defer></script>` : '';
  ctx.status = o.status ?? 200;
  ctx.set('content-security-policy', cspFor(ctx, o.script === true));
  // Not `no-referrer` (the default of every answer): with it, browsers send `Origin: null` with a
  // form's POST, and the Origin check of every change would refuse the page's own forms. Other
  // origins still learn nothing.
  ctx.set('referrer-policy', 'same-origin');
  ctx.type = 'html';
  ctx.body = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(fullTitle)} – Account</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
${script}
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${signedIn.top}${notice}${errorLine(o.error)}${body}${signedIn.bottom}
</main>
</body>
</html>`;
}

/** Signed out: one button that starts the sign-in. */
export function renderSignInPage(
  ctx: Context,
  o: { error?: string; status?: number; notice?: string } = {},
): void {
  sendAccountPage(
    ctx,
    'Your account',
    `<p>Sign in to see your identity, set up an authenticator app, add passkeys and manage where you are signed in.</p>
<form method="post" action="/account/login"><button type="submit">Sign in</button></form>`,
    o,
  );
}

export function renderOverviewPage(
  ctx: Context,
  session: PageSession,
  identity: { id: string; name: string; type: string },
  notice?: string,
): void {
  sendAccountPage(
    ctx,
    'Your account',
    `<dl class="facts">
<dt>Name</dt><dd>${escapeHtml(identity.name)}</dd>
<dt>Type</dt><dd>${escapeHtml(identity.type)}</dd>
<dt>Identity id</dt><dd><code>${escapeHtml(identity.id)}</code></dd>
</dl>`,
    { session, current: 'overview', notice },
  );
}

/** What the TOTP page shows: nothing yet, an enrollment in progress, or a verified configuration. */
export type TotpPageState =
  | { kind: 'none' }
  | { kind: 'enrolling'; qrDataUrl: string; secret: string; recoveryCodes?: string[] }
  | { kind: 'verified'; remaining: number };

const CODE_ATTRS = 'inputmode="numeric" autocapitalize="none" spellcheck="false" maxlength="16"';

function codeField(id: string, label: string, invalid: boolean, hint?: string): string {
  return field({ id, label, autocomplete: 'one-time-code', invalid, hint, attributes: CODE_ATTRS });
}

const codesList = (codes: string[]) =>
  `<ul class="codes">${codes.map((c) => `<li><code>${escapeHtml(c)}</code></li>`).join('')}</ul>`;

export function renderTotpPage(
  ctx: Context,
  session: PageSession,
  state: TotpPageState,
  o: { error?: string; invalidField?: string; notice?: string; status?: number } = {},
): void {
  const invalid = (id: string) => o.invalidField === id;
  let body: string;
  if (state.kind === 'none') {
    body = `<p>An authenticator app on your phone gives you a six-digit code that changes every 30 seconds.
Once it is set up, signing in asks for that code after your password.</p>
${postForm(session, '/account/totp/enroll', '', 'Set up an authenticator app')}`;
  } else if (state.kind === 'enrolling') {
    const codes = state.recoveryCodes
      ? `<h2>Recovery codes</h2>
<p>Each code signs you in once if you lose your phone. Keep them somewhere safe: they are shown only now.</p>
${codesList(state.recoveryCodes)}`
      : '';
    body = `<p>Scan this code with your authenticator app, then enter the six-digit code it shows.</p>
<img class="qr" src="${escapeHtml(state.qrDataUrl)}" alt="QR code to add this account to an authenticator app">
<p>Or enter this key in the app: <code id="totp-secret">${escapeHtml(state.secret)}</code></p>
${codes}
${postForm(session, '/account/totp/verify', codeField('code', 'Code from the app', invalid('code')), 'Verify and turn on')}
${postForm(session, '/account/totp/cancel', '', 'Cancel the setup', { secondary: true })}`;
  } else {
    body = `<p>Your authenticator app is set up: signing in asks for its code.
You have ${state.remaining} unused recovery code${state.remaining === 1 ? '' : 's'}.</p>
<h2>New recovery codes</h2>
<p>Replaces every recovery code you have with new ones.</p>
${postForm(session, '/account/totp/recovery-codes', codeField('regenerate-code', 'Code from the app', invalid('regenerate-code')), 'Make new recovery codes')}
<h2>Remove the authenticator app</h2>
${postForm(session, '/account/totp/remove', codeField('remove-code', 'Code from the app or a recovery code', invalid('remove-code')), 'Remove', { secondary: true })}`;
  }
  sendAccountPage(ctx, 'Authenticator app', body, { session, current: 'totp', ...o });
}

export function renderRecoveryCodesPage(ctx: Context, session: PageSession, codes: string[]): void {
  sendAccountPage(
    ctx,
    'New recovery codes',
    `<p>Your previous recovery codes no longer work. Keep these somewhere safe: they are shown only now.</p>
${codesList(codes)}
<p><a href="/account/totp">Done</a></p>`,
    { session, current: 'totp' },
  );
}

const when = (iso: string) =>
  `<time datetime="${escapeHtml(iso)}">${escapeHtml(iso.replace('T', ' ').replace(/\.\d+Z$/, ' UTC'))}</time>`;

export function renderSessionsPage(
  ctx: Context,
  session: PageSession,
  sessions: OwnApiSessionView[],
  o: { notice?: string; error?: string; status?: number } = {},
): void {
  const items = sessions
    .map((s) => {
      const title = s.isCurrent
        ? 'This browser'
        : s.kind === 'oidc'
          ? 'OpenID Connect sign-in'
          : 'API session';
      return `<li><h2>${escapeHtml(title)}</h2><dl class="facts">
<dt>Method</dt><dd>${escapeHtml(s.authMethod ?? 'unknown')}${s.isMfaComplete ? ' + second factor' : ''}</dd>
<dt>From</dt><dd>${escapeHtml(s.ipAddress ?? 'unknown')}</dd>
<dt>Signed in</dt><dd>${when(s.createdAt)}</dd>
<dt>Last used</dt><dd>${when(s.lastActivityAt)}</dd>
<dt>Ends</dt><dd>${when(s.expiresAt)}</dd>
</dl>${postForm(session, '/account/sessions/end', '', s.isCurrent ? 'End this session and sign out' : 'End this session', { secondary: true, hidden: { session: s.id } })}</li>`;
    })
    .join('\n');
  sendAccountPage(
    ctx,
    'Sessions',
    `<p>Where your identity is signed in now. Ending a session signs that application or device out.</p>
<ul class="items">${items}</ul>`,
    { session, current: 'sessions', ...o },
  );
}

/** A refusal of the account page itself (a bad sign-in, a form without its token). */
export function renderAccountErrorPage(
  ctx: Context,
  status: number,
  message: string,
  session?: PageSession,
): void {
  sendAccountPage(ctx, 'Something went wrong', `<p><a href="/account/">Back to your account</a></p>`, {
    status,
    error: message,
    session,
  });
}

/** A passkey as the page lists it. */
export interface PasskeyItem {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  backedUp: boolean;
}

/** Whether this page can add a passkey now: yes, after a fresh sign-in, or not at this address. */
export type PasskeyAdding =
  { kind: 'ready' } | { kind: 'reauthenticate' } | { kind: 'unavailable'; reason: string };

export function renderPasskeysPage(
  ctx: Context,
  session: PageSession,
  passkeys: PasskeyItem[],
  adding: PasskeyAdding,
  o: { notice?: string; error?: string; invalidField?: string; status?: number } = {},
): void {
  const items = passkeys
    .map((p) => {
      const nameId = `name-${p.id}`;
      return `<li><h2>${escapeHtml(p.name)}</h2><dl class="facts">
<dt>Added</dt><dd>${when(p.createdAt)}</dd>
<dt>Last used</dt><dd>${p.lastUsedAt ? when(p.lastUsedAt) : 'never'}</dd>
<dt>Synced</dt><dd>${p.backedUp ? 'yes (backed up by its provider)' : 'no (this device only)'}</dd>
</dl>${postForm(
        session,
        '/account/passkeys/rename',
        field({
          id: nameId,
          label: 'New name',
          autocomplete: 'off',
          value: p.name,
          invalid: o.invalidField === nameId,
          attributes: 'maxlength="64"',
        }),
        `Rename<span class="vh"> ${escapeHtml(p.name)}</span>`,
        { secondary: true, hidden: { id: p.id } },
      )}${postForm(
        session,
        '/account/passkeys/remove',
        '',
        `Remove<span class="vh"> ${escapeHtml(p.name)}</span>`,
        {
          secondary: true,
          hidden: { id: p.id },
        },
      )}</li>`;
    })
    .join('\n');
  const list = passkeys.length > 0 ? `<ul class="items">${items}</ul>` : '<p>You have no passkeys yet.</p>';
  let add: string;
  if (adding.kind === 'unavailable') {
    add = `<p>Passkeys cannot be added at this address: ${escapeHtml(adding.reason)}.</p>`;
  } else if (adding.kind === 'reauthenticate') {
    add = `<p>Adding a passkey needs a recent sign-in (within the last five minutes). Sign in again to continue.</p>
<form method="post" action="/account/login"><input type="hidden" name="returnTo" value="/account/passkeys"><button type="submit">Sign in again</button></form>`;
  } else {
    add = `<p>A passkey signs you in with your device’s screen lock or a security key instead of a password.</p>
<div id="add-passkey-status" role="status" aria-live="polite"></div>
${postForm(
  session,
  '/account/passkeys/add',
  field({
    id: 'passkey-name',
    label: 'Name of the new passkey',
    autocomplete: 'off',
    hint: 'For example the device it is on.',
    attributes: 'maxlength="64"',
  }),
  'Add a passkey',
).replace('<form ', '<form id="add-passkey" ')}`;
  }
  sendAccountPage(
    ctx,
    'Passkeys',
    `${list}
<h2>Add a passkey</h2>
${add}`,
    { session, current: 'passkeys', script: adding.kind === 'ready', ...o },
  );
}
