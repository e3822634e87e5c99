import type { Context } from 'koa';
import type { CodeForm, ConfirmForm, DevicePages, DeviceResult } from '../oidc/device-flow.js';
import { errorLine, escapeHtml, field, sendPage } from './oidc-login-pages.js';

/*
 * The person's side of the device authorization grant (RFC 8628 §3.3), in the login pages' look,
 * accessibility and CSP, with no script: the code form, its confirmation, and the result. The forms
 * post to the provider's `/oidc/device` with the provider's XSRF secret (its session cookie is let
 * through on that path only, docs/adr/0005-in-process-cookie-less-resume.md).
 */

const hidden = (name: string, value: string) =>
  `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;

/** What the device's code looks like, for the field's hint and its pattern. */
const CODE_HINT = 'The 8 letters your device shows, like BDFG-HJKL. Case and the dash do not matter.';

function codeForm(ctx: Context, form: CodeForm): void {
  const invalid = form.error !== undefined;
  const check = form.fromLink
    ? '<p>The link you opened filled in the code. Check that your device shows the same code, then continue.</p>'
    : '';
  const body =
    errorLine(form.error) +
    check +
    `<form method="post" action="${escapeHtml(form.action)}">${hidden('xsrf', form.xsrf)}${field({
      id: 'user_code',
      label: 'Code',
      autocomplete: 'off',
      hint: CODE_HINT,
      invalid,
      value: form.userCode,
      autofocus: true,
      attributes: 'autocapitalize="characters" spellcheck="false" maxlength="32"',
    })}<button type="submit">Continue</button></form>`;
  sendPage(ctx, 'Sign in on a device', body, { status: form.status, error: form.error });
}

function confirm(ctx: Context, form: ConfirmForm): void {
  const from = form.deviceAddress
    ? `<p>The request came from the address <code>${escapeHtml(form.deviceAddress)}</code>.</p>`
    : '';
  const stays = form.staysSignedIn
    ? '<p>The device stays signed in until you sign out there or your session is ended.</p>'
    : '';
  const title = `Sign in on the device showing ${form.userCode}?`;
  const body = `<p>Continue only if you started this sign-in yourself and your device shows the code
<span class="usercode">${escapeHtml(form.userCode)}</span>. Next you sign in as yourself, and the device
then acts as you.</p>${from}${stays}
<form method="post" action="${escapeHtml(form.action)}">${hidden('xsrf', form.xsrf)}${hidden('user_code', form.userCode)}
<button type="submit" name="confirm" value="yes">Confirm and sign in</button>
<button type="submit" name="abort" value="yes" class="secondary">Decline</button></form>`;
  sendPage(ctx, title, body);
}

function result(ctx: Context, outcome: DeviceResult): void {
  if (outcome === 'signed-in') {
    sendPage(
      ctx,
      'Device signed in',
      '<p>You are signed in on your device. You may close this window and return to the device.</p>',
    );
    return;
  }
  sendPage(
    ctx,
    'Sign-in declined',
    '<p>The device was not signed in. If you did not start this sign-in, someone may have tried to get you to sign in their device.</p>',
  );
}

/** The device flow pages, handed to the provider's configuration through `createOidc`. */
export const devicePages: DevicePages = {
  codeForm: (ctx, form) => codeForm(ctx as unknown as Context, form),
  confirm: (ctx, form) => confirm(ctx as unknown as Context, form),
  result: (ctx, outcome) => result(ctx as unknown as Context, outcome),
};

/** 429 for an address that entered too many wrong codes (RFC 8628 §5.1), with the wait. */
export function renderTooManyCodesPage(ctx: Context, wait: number): void {
  ctx.set('retry-after', String(wait));
  sendPage(
    ctx,
    'Too many wrong codes',
    errorLine('Too many wrong codes were entered from your network.') +
      `<p>Wait ${wait} seconds, then enter the code again.</p>`,
    { status: 429, error: 'too many wrong codes' },
  );
}
