import type { Context } from 'koa';

/** Login pages are never framed and load nothing from elsewhere (clickjacking, RFC 6819 §4.4.1.9). */
const CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'";
/** The TOTP enrollment page also shows its QR code, inlined as a `data:` PNG (nothing fetched). */
const CSP_WITH_DATA_IMAGES = `${CSP}; img-src data:`;

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:24rem;margin:3rem auto;padding:0 1rem}
label{display:block;margin:.75rem 0 .25rem}input{width:100%;padding:.4rem;box-sizing:border-box}
button{margin-top:1rem;padding:.5rem 1rem}.error{color:#b00020}
img.qr{display:block;margin:1rem auto;width:16rem;height:16rem}code.secret{word-break:break-all}
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>`;
}

export const errorLine = (error?: string) =>
  error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '';

const hiddenId = (authRequestId: string) =>
  `<input type="hidden" name="authRequestId" value="${escapeHtml(authRequestId)}">`;

/** A form posting `inner` fields and the auth request id to `action`. */
export const formHtml = (action: string, authRequestId: string, inner: string, button: string) =>
  `<form method="post" action="${escapeHtml(action)}">${hiddenId(authRequestId)}${inner}<button type="submit">${button}</button></form>`;

export type LoginPage = 'username' | 'cert' | 'ext-jwt';

function pageBody(kind: LoginPage, authRequestId: string, action: string, error?: string): [string, string] {
  const form = (inner: string, button: string) => formHtml(action, authRequestId, inner, button);
  if (kind === 'username') {
    return [
      'Sign in',
      errorLine(error) +
        form(
          `<label for="username">Username</label><input id="username" name="username" autocomplete="username" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>`,
          'Sign in',
        ),
    ];
  }
  if (kind === 'cert') {
    return [
      'Sign in with a certificate',
      errorLine(error) +
        `<p>Your browser presents the client certificate of your identity during the TLS handshake; the
certificate must come from this service's PKI or from a registered 3rd-party CA.</p>` +
        form('', 'Continue with my certificate'),
    ];
  }
  return [
    'Sign in with an external JWT',
    errorLine(error) +
      `<p>Send <code>POST ${escapeHtml(action)}</code> with the header
<code>Authorization: Bearer &lt;JWT of your identity provider&gt;</code> and the body
<code>{"authRequestId":"${escapeHtml(authRequestId)}"}</code>. A browser cannot add that header by itself:
use the application that started this sign-in.</p>`,
  ];
}

/** Sends a complete page with the login pages' CSP (`dataImages`: allow inline `data:` PNGs). */
export function sendPage(
  ctx: Context,
  title: string,
  body: string,
  options: { status?: number; dataImages?: boolean } = {},
): void {
  ctx.status = options.status ?? 200;
  ctx.set('content-security-policy', options.dataImages ? CSP_WITH_DATA_IMAGES : CSP);
  ctx.type = 'html';
  ctx.body = page(title, body);
}

/** A usable HTML login page that posts back to the same URL as a form. */
export function renderLoginPage(
  ctx: Context,
  kind: LoginPage,
  authRequestId: string,
  options: { status?: number; error?: string } = {},
): void {
  const [title, body] = pageBody(kind, authRequestId, ctx.path, options.error);
  sendPage(ctx, title, body, { status: options.status });
}

/** After end_session without a redirect target, for browsers. */
export function renderSignedOutPage(ctx: Context): void {
  ctx.set('content-security-policy', CSP);
  ctx.type = 'html';
  ctx.body = page('Signed out', '<p>You are signed out. You may close this window.</p>');
}
