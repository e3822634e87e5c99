// A server-side relying party: signs users in at the svc controller with the Authorization Code
// Flow and PKCE (openid-client), calls the Edge API with the access token, and signs out through
// end_session. Run: NODE_EXTRA_CA_CERTS=data/pki/ca.pem node examples/web-app/server.js
import { createHash, randomBytes } from 'node:crypto';
import { setInterval } from 'node:timers';
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
 * Sessions in memory, found by a random cookie; a real app would use a store that survives
 * restarts. Anyone can start a sign-in without signing in, so unfinished sign-ins are kept apart
 * and bounded: at most MAX_PENDING (the oldest is dropped for a new one), each for ten minutes.
 * Signed-in sessions exist only after the controller has authenticated someone.
 */
const sessions = new Map();
const pending = new Map();
const COOKIE = 'webapp.sid';
const PENDING_MS = 10 * 60_000;
const MAX_PENDING = Number(process.env.MAX_PENDING_SIGN_INS ?? 1000);
setInterval(() => {
  // A Map iterates in insertion order: the oldest sign-ins come first.
  for (const [id, s] of pending) {
    if (Date.now() - s.started <= PENDING_MS) break;
    pending.delete(id);
  }
}, 60_000).unref();

function sessionOf(ctx) {
  const id = ctx.cookies.get(COOKIE);
  if (!id) return undefined;
  const started = pending.get(id);
  // An expired sign-in the sweep has not reached yet is already gone.
  return sessions.get(id) ?? (started && Date.now() - started.started <= PENDING_MS ? started : undefined);
}

/**
 * Stores `data` under a new random id and drops the session the request came with. Called when a
 * sign-in starts and again when it succeeds, so the signed-in session never has an id that anyone
 * could have known before (an id planted in the browser would otherwise be signed in too:
 * session fixation, OWASP Session Management Cheat Sheet).
 */
function newSession(ctx, data) {
  const old = ctx.cookies.get(COOKIE);
  sessions.delete(old);
  pending.delete(old);
  const id = randomBytes(32).toString('base64url');
  if (data.tokens) sessions.set(id, data);
  else {
    if (pending.size >= MAX_PENDING) pending.delete(pending.keys().next().value);
    pending.set(id, data);
  }
  // Secure is set when the request came over HTTPS (Koa's default).
  ctx.cookies.set(COOKIE, id, { httpOnly: true, sameSite: 'lax', overwrite: true });
  return data;
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
  const session = newSession(ctx, {
    codeVerifier: client.randomPKCECodeVerifier(),
    state: client.randomState(),
    nonce: client.randomNonce(),
    started: Date.now(),
  });
  const parameters = {
    redirect_uri: new URL('/auth/callback', appUrl).href,
    scope: 'openid offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(session.codeVerifier),
    code_challenge_method: 'S256',
    state: session.state,
    nonce: session.nonce,
  };
  // `method` picks the controller's login page (password or cert); it is optional.
  if (ctx.query.method === 'cert' || ctx.query.method === 'password') parameters.method = ctx.query.method;
  ctx.redirect(client.buildAuthorizationUrl(config, parameters).href);
});

router.get('/auth/callback', async (ctx) => {
  const session = sessionOf(ctx);
  if (!session?.codeVerifier) return page(ctx, 'Sign-in failed', '<p>No sign-in is in progress.</p>', 400);
  const tokens = await client.authorizationCodeGrant(config, new URL(ctx.url, appUrl), {
    pkceCodeVerifier: session.codeVerifier,
    expectedState: session.state,
    expectedNonce: session.nonce,
    idTokenExpected: true,
  });
  newSession(ctx, { tokens, claims: tokens.claims() });
  ctx.redirect('/');
});

router.post('/logout', (ctx) => {
  const id = ctx.cookies.get(COOKIE);
  const session = sessionOf(ctx);
  sessions.delete(id);
  pending.delete(id);
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
