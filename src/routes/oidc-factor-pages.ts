import type { Context } from 'koa';
import { LOGIN_PATHS } from '../oidc/login-paths.js';
import type { AuthQuery } from '../oidc/login-state.js';
import {
  errorLine,
  escapeHtml,
  field,
  formHtml as form,
  passkeyForm,
  sendPage,
  type SendPageOptions,
} from './oidc-login-pages.js';

type PageOptions = SendPageOptions;

const optionsUrl = (path: string, authRequestId: string) =>
  `${path}?authRequestID=${encodeURIComponent(authRequestId)}`;

/** The second factor paid with one of the identity's passkeys instead of a code. */
const passkeyInstead = (authRequestId: string) =>
  passkeyForm({
    kind: 'get',
    authRequestId,
    action: LOGIN_PATHS.passkey,
    optionsUrl: optionsUrl(LOGIN_PATHS.passkey, authRequestId),
    button: 'Use a passkey instead',
  });

/**
 * TOTP entry: a code of the app or a recovery code; with `options.passkey`, a passkey of the
 * identity instead (the TOTP query's `passkey` member).
 */
export function renderTotpPage(ctx: Context, authRequestId: string, options: PageOptions = {}): void {
  const code = field({
    id: 'code',
    label: 'Code',
    hint: 'The 6-digit code of your authenticator app, or one of your recovery codes.',
    autocomplete: 'one-time-code',
    invalid: options.error !== undefined,
    autofocus: true,
    attributes: 'maxlength="64" autocapitalize="none" spellcheck="false"',
  });
  const body =
    errorLine(options.error) +
    form(LOGIN_PATHS.totp, authRequestId, code, 'Verify') +
    (options.passkey ? passkeyInstead(authRequestId) : '');
  sendPage(ctx, 'Two-step verification', body, options);
}

/**
 * A passkey the policy requires: an assertion of one of the identity's passkeys, or (`register`)
 * the registration of its first one, once that is all the login owes. Both need the browser's
 * passkey support and the script; without them the page says so.
 */
export function renderPasskeyPage(
  ctx: Context,
  authRequestId: string,
  register: boolean,
  options: PageOptions = {},
): void {
  const path = register ? LOGIN_PATHS.passkeyRegister : LOGIN_PATHS.passkey;
  const body =
    errorLine(options.error) +
    passkeyForm({
      kind: register ? 'create' : 'get',
      authRequestId,
      action: path,
      optionsUrl: optionsUrl(path, authRequestId),
      intro: register
        ? 'Your sign-in requires a passkey. Create one now on this device or a security key.'
        : 'Your sign-in requires one of your passkeys.',
      button: register ? 'Create a passkey' : 'Use my passkey',
    }) +
    `<noscript><p>Passkeys need JavaScript in this browser.</p></noscript>`;
  sendPage(ctx, register ? 'Set up a passkey' : 'Verify with a passkey', body, { ...options, passkey: true });
}

export interface EnrollmentView {
  /** The otpauth URL of the enrollment in progress and its QR code; absent before the start. */
  provisioningUrl?: string;
  qrDataUrl?: string;
  /** Only right after the start: they are stored hashed and shown once. */
  recoveryCodes?: string[];
}

function startForm(authRequestId: string): string {
  return (
    `<p>Your sign-in requires a one-time code from an authenticator app. Set one up now.</p>` +
    form(LOGIN_PATHS.totpEnroll, authRequestId, '', 'Set up an authenticator app')
  );
}

function enrollmentBody(authRequestId: string, view: EnrollmentView, error?: string): string {
  const secret = new URL(view.provisioningUrl!).searchParams.get('secret') ?? '';
  const codes = view.recoveryCodes?.length
    ? `<h2>Recovery codes</h2>
<p>Each works once if you lose your device. Keep them now: they are shown only this once.</p>
<ul class="codes">${view.recoveryCodes.map((c) => `<li><code>${escapeHtml(c)}</code></li>`).join('')}</ul>`
    : '';
  const code = field({
    id: 'code',
    label: 'Code from the app',
    hint: 'The 6 digits your authenticator app shows for this account.',
    autocomplete: 'one-time-code',
    invalid: error !== undefined,
    autofocus: error !== undefined,
    attributes: 'inputmode="numeric" pattern="[0-9]{6}" maxlength="6"',
  });
  return (
    `<p>Scan this QR code with your authenticator app, then enter the code it shows.</p>
<img class="qr" src="${escapeHtml(view.qrDataUrl!)}" alt="QR code of the authenticator setup link">
<p>Or enter this key by hand: <code class="secret">${escapeHtml(secret)}</code></p>` +
    codes +
    form(LOGIN_PATHS.totpEnrollVerify, authRequestId, code, 'Verify and continue')
  );
}

/**
 * TOTP enrollment mid-flow: the start button, or the QR code and the verify form; with
 * `options.passkey`, a passkey of the identity instead (it pays the code without an app).
 */
export function renderEnrollmentPage(
  ctx: Context,
  authRequestId: string,
  view: EnrollmentView,
  options: PageOptions = {},
): void {
  const inProgress = view.provisioningUrl !== undefined && view.qrDataUrl !== undefined;
  const body =
    errorLine(options.error) +
    (inProgress ? enrollmentBody(authRequestId, view, options.error) : startForm(authRequestId)) +
    (options.passkey ? passkeyInstead(authRequestId) : '');
  sendPage(ctx, 'Set up two-step verification', body, options);
}

function owedItem(q: AuthQuery): string {
  if (q.typeId === 'EXT-JWT') {
    return `<li>A token of your identity provider (signer <code>${escapeHtml(String(q.id))}</code>), sent as
<code>Authorization: Bearer</code> with the sign-in request.</li>`;
  }
  // An authenticator to set up is listed last: it can be set up only once it is all that is owed
  // (`owesOnly`, oidc/factor-binding.ts), and then the enrollment page is shown instead of this list.
  if (q.typeId === 'MFA' && q.isTotpEnrolled === false) {
    return '<li>Then an authenticator app, set up during this sign-in.</li>';
  }
  if (q.typeId === 'MFA' && q.isPasskeyRegistered === false) {
    return '<li>Then a passkey, set up during this sign-in.</li>';
  }
  if (q.typeId === 'MFA' && q.isPasskeyRegistered === true) return '<li>One of your passkeys.</li>';
  return `<li>${escapeHtml(q.typeId)}</li>`;
}

/** Factors a browser cannot answer by itself (the secondary external JWT), and what follows them. */
export function renderOwedPage(ctx: Context, authQueries: AuthQuery[], options: PageOptions = {}): void {
  const items = authQueries.map(owedItem).join('');
  sendPage(
    ctx,
    'More verification needed',
    `<p>This sign-in needs more:</p><ul>${items}</ul>
<p>Use the application that started this sign-in to provide it.</p>`,
    options,
  );
}
