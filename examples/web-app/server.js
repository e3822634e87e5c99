// A server-side relying party: signs users in at the svc controller with the Authorization Code
// Flow and PKCE (openid-client), calls the Edge API with the access token, and signs out through
// end_session. Run: NODE_EXTRA_CA_CERTS=data/pki/ca.pem node examples/web-app/server.js
import { Buffer } from 'node:buffer';
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import Koa from 'koa';
import Router from '@koa/router';
import * as client from 'openid-client';

const issuer = new URL(process.env.SVC_ISSUER ?? 'https://127.0.0.1:1280/oidc');
const apiBase = new URL(process.env.SVC_API_URL ?? '/edge/client/v1/', issuer);
const port = Number(process.env.PORT ?? 3000);
const clientId = process.env.SVC_CLIENT_ID ?? 'svc';
/** Where the browser reaches this app (the redirect URIs are built from it); set after listening. */
let appUrl = process.env.APP_URL;

const config = await client.discovery(issuer, clientId, undefined, client.None());

/**
 * Signed-in sessions in memory, found by a random cookie; a real app would use a store that
 * survives restarts. They exist only after the controller has authenticated someone.
 */
const sessions = new Map();
const COOKIE = 'webapp.sid';

/**
 * Stores a signed-in session under a new random id and drops the session the request came with,
 * so the signed-in session never has an id that anyone could have known before (an id planted in
 * the browser would otherwise be signed in too: session fixation, OWASP Session Management Cheat
 * Sheet).
 */
function newSession(ctx, data) {
  sessions.delete(ctx.cookies.get(COOKIE));
  const id = randomBytes(32).toString('base64url');
  sessions.set(id, data);
  // Secure is set when the request came over HTTPS (Koa's default).
  ctx.cookies.set(COOKIE, id, { httpOnly: true, sameSite: 'lax', overwrite: true });
  return data;
}

const sessionOf = (ctx) => sessions.get(ctx.cookies.get(COOKIE));

/**
 * A sign-in in progress (PKCE verifier, state, nonce) lives in the browser, in a cookie sealed
 * with AES-256-GCM: anyone may start a sign-in without signing in, so nothing is kept here per
 * sign-in (nothing grows, and no one's sign-ins can push out another's), and the browser can
 * neither read nor alter it. The key is made at start, or given in WEB_APP_COOKIE_KEY (32 bytes,
 * base64) so that several processes, or a restarted one, accept each other's cookies. The cookie
 * is sent only to the callback, and lasts ten minutes.
 */
const SIGN_IN_COOKIE = 'webapp.signin';
const SIGN_IN_PATH = '/auth/callback';
const SIGN_IN_SECONDS = 10 * 60;
const sealKey = process.env.WEB_APP_COOKIE_KEY
  ? Buffer.from(process.env.WEB_APP_COOKIE_KEY, 'base64')
  : randomBytes(32);
if (sealKey.length !== 32) throw new Error('WEB_APP_COOKIE_KEY must be 32 bytes, base64');
// The cookie's name is authenticated with it: a sealed value is accepted only as this cookie.
const SEAL_AAD = Buffer.from(SIGN_IN_COOKIE);

function seal(data) {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealKey, iv).setAAD(SEAL_AAD);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(data)), cipher.final()]);
  return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
}

/** The sealed data, or undefined if the value was not sealed with our key (or was altered). */
function unseal(value) {
  const bytes = Buffer.from(value ?? '', 'base64url');
  if (bytes.length < 12 + 16) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealKey, bytes.subarray(0, 12)).setAAD(SEAL_AAD);
    decipher.setAuthTag(bytes.subarray(-16));
    const data = Buffer.concat([decipher.update(bytes.subarray(12, -16)), decipher.final()]);
    return JSON.parse(data.toString());
  } catch {
    return undefined;
  }
}

/** Koa's cookies write Expires only; this one carries Max-Age, and is cleared the same way. */
function setSignInCookie(ctx, value, maxAge) {
  const secure = ctx.secure ? '; Secure' : '';
  ctx.append(
    'Set-Cookie',
    `${SIGN_IN_COOKIE}=${value}; Path=${SIGN_IN_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secure}`,
  );
}

/** The sign-in this browser started, if it is still in time; the cookie is cleared either way. */
function takeSignIn(ctx) {
  const signIn = unseal(ctx.cookies.get(SIGN_IN_COOKIE));
  setSignInCookie(ctx, '', 0);
  // Max-Age is up to the browser; the seal's own expiry is not.
  return signIn && Date.now() < signIn.expires ? signIn : undefined;
}

const escapeHtml = (s) =>
  String(s).replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );

const STYLE = `body{font:1rem/1.5 system-ui,sans-serif;max-width:40rem;margin:0 auto;padding:1.5rem 1rem}
pre{background:#f4f4f4;padding:.75rem;overflow:auto}button,.button{font:inherit;padding:.5rem 1rem}`;

/**
 * The pages run no script and load nothing: the policy allows only the one inline style (by its
 * hash), the empty data: icon, and forms that post here, whose answer may redirect to the
 * controller's end_session (browsers check form-action on redirects too). No other site may frame
 * them (clickjacking on Sign out), and no URL, with its code and state, leaks as a Referer.
 */
const endSession = config.serverMetadata().end_session_endpoint;
const CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  'img-src data:',
  `form-action 'self'${endSession ? ` ${new URL(endSession).origin}` : ''}`,
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

function securityHeaders(ctx) {
  ctx.set('content-security-policy', CSP);
  ctx.set('x-frame-options', 'DENY');
  ctx.set('x-content-type-options', 'nosniff');
  ctx.set('referrer-policy', 'no-referrer');
}

function page(ctx, title, body, status = 200) {
  ctx.status = status;
  ctx.type = 'html';
  ctx.body = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · example web app</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body>
</html>`;
}

const router = new Router();

router.get('/', async (ctx) => {
  const session = sessionOf(ctx);
  if (!session?.tokens) {
    return page(
      ctx,
      'Example web app',
      `<p>You are not signed in.</p>
<p><a class="button" href="/login">Sign in</a></p>
<p><a href="/login?method=cert">Sign in with a client certificate</a></p>`,
    );
  }
  // The Edge API accepts the access token as a bearer token.
  const response = await client.fetchProtectedResource(
    config,
    session.tokens.access_token,
    new URL('current-identity', apiBase),
    'GET',
  );
  const identity = await response.json();
  const claims = session.claims;
  page(
    ctx,
    'Signed in',
    `<p>Signed in as <strong id="identity-name">${escapeHtml(claims.name ?? claims.sub)}</strong>.</p>
<h2>ID token claims</h2>
<dl>
<dt>sub</dt><dd id="claim-sub">${escapeHtml(claims.sub)}</dd>
<dt>amr</dt><dd id="claim-amr">${escapeHtml((claims.amr ?? []).join(' '))}</dd>
<dt>z_asid (API session)</dt><dd id="claim-asid">${escapeHtml(claims.z_asid ?? '')}</dd>
</dl>
<h2>Edge API: GET current-identity (HTTP ${response.status})</h2>
<pre id="api-result">${escapeHtml(JSON.stringify(identity, null, 2))}</pre>
<form method="post" action="/logout"><button type="submit">Sign out</button></form>`,
  );
});

router.get('/login', async (ctx) => {
  // A link from another site must not end a sign-in: a signed-in user stays signed in.
  if (sessionOf(ctx)?.tokens) return ctx.redirect('/');
  const signIn = {
    codeVerifier: client.randomPKCECodeVerifier(),
    state: client.randomState(),
    nonce: client.randomNonce(),
    expires: Date.now() + SIGN_IN_SECONDS * 1000,
  };
  setSignInCookie(ctx, seal(signIn), SIGN_IN_SECONDS);
  const parameters = {
    redirect_uri: new URL(SIGN_IN_PATH, appUrl).href,
    scope: 'openid offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(signIn.codeVerifier),
    code_challenge_method: 'S256',
    state: signIn.state,
    nonce: signIn.nonce,
  };
  // `method` picks the controller's login page (password or cert); it is optional.
  if (ctx.query.method === 'cert' || ctx.query.method === 'password') parameters.method = ctx.query.method;
  ctx.redirect(client.buildAuthorizationUrl(config, parameters).href);
});

router.get(SIGN_IN_PATH, async (ctx) => {
  const signIn = takeSignIn(ctx);
  if (!signIn) return page(ctx, 'Sign-in failed', '<p>No sign-in is in progress.</p>', 400);
  const tokens = await client.authorizationCodeGrant(config, new URL(ctx.url, appUrl), {
    pkceCodeVerifier: signIn.codeVerifier,
    expectedState: signIn.state,
    expectedNonce: signIn.nonce,
    idTokenExpected: true,
  });
  newSession(ctx, { tokens, claims: tokens.claims() });
  ctx.redirect('/');
});

router.post('/logout', (ctx) => {
  const id = ctx.cookies.get(COOKIE);
  const session = sessionOf(ctx);
  sessions.delete(id);
  ctx.cookies.set(COOKIE, null);
  ctx.status = 303;
  if (!session?.tokens) return ctx.redirect('/');
  // end_session ends the controller's API session: its access and refresh tokens stop working.
  const url = client.buildEndSessionUrl(config, {
    id_token_hint: session.tokens.id_token,
    post_logout_redirect_uri: new URL('/auth/logout', appUrl).href,
  });
  ctx.redirect(url.href);
});

router.get('/auth/logout', (ctx) =>
  page(ctx, 'Signed out', '<p>You are signed out.</p><p><a href="/">Back to the start page</a></p>'),
);

const app = new Koa();
app.use(async (ctx, next) => {
  // Set first, on every answer: an error page is a page too.
  securityHeaders(ctx);
  try {
    await next();
  } catch (err) {
    console.error(err);
    page(ctx, 'Error', `<p>${escapeHtml(err instanceof Error ? err.message : String(err))}</p>`, 500);
  }
});
app.use(router.routes());
app.use(router.allowedMethods());

const server = app.listen(port, '127.0.0.1', () => {
  appUrl ??= `http://localhost:${server.address().port}`;
  console.log(`web-app listening on ${appUrl}`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
