#!/usr/bin/env node
// A native (CLI) client of the svc controller, the flow device SDKs use: the Authorization Code
// Flow with PKCE and a loopback redirect on a random port (RFC 8252 §7.3), then a call to the
// Edge API, a token refresh, and the call again with the new access token.
// With --device, for a machine without a browser: the device authorization grant (RFC 8628); the
// person signs in on another device with the code it prints, while it polls.
// Run: NODE_EXTRA_CA_CERTS=data/pki/ca.pem node examples/cli-client/cli.js https://127.0.0.1:1280/oidc [--device]
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import * as client from 'openid-client';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    json: { type: 'boolean', default: false },
    device: { type: 'boolean', default: false },
    'client-id': { type: 'string', default: 'svc' },
    api: { type: 'string' },
    timeout: { type: 'string', default: '300' },
  },
});
if (positionals.length !== 1) {
  console.error(
    'usage: cli.js <issuer URL, e.g. https://127.0.0.1:1280/oidc> [--device] [--json] [--api <Edge client API URL>]',
  );
  process.exit(2);
}
const issuer = new URL(positionals[0]);
const apiBase = new URL(values.api ?? '/edge/client/v1/', issuer);
const say = (line) => (values.json ? process.stderr : process.stdout).write(`${line}\n`);

const config = await client.discovery(issuer, values['client-id'], undefined, client.None());

const digest = (text) => createHash('sha256').update(text).digest();
/** Compared through digests, in constant time: the state is all that tells our answer apart. */
const sameState = (a, b) => a !== null && timingSafeEqual(digest(a), digest(b));

function answer(res, status, title, text) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', connection: 'close' });
  res.end(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<title>${title}</title></head><body><main><h1>${title}</h1>
<p>${text}</p></main></body></html>`);
}

/**
 * Waits for the browser to come back to http://127.0.0.1:<port>/auth/callback with our `state`.
 * Any local process can reach the loopback port, so a request without that state is answered 400
 * and ignored: it cannot end the sign-in (RFC 8252 §8.3, RFC 9700 §4.7).
 */
function loopback(state) {
  let resolveCallback;
  let rejectCallback;
  const callback = new Promise((resolve, reject) => {
    resolveCallback = resolve;
    rejectCallback = reject;
  });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${server.address().port}`);
    if (url.pathname !== '/auth/callback') {
      res.writeHead(404).end();
      return;
    }
    if (!sameState(url.searchParams.get('state'), state)) {
      answer(res, 400, 'Not this sign-in', 'This answer does not belong to the sign-in in progress.');
      return;
    }
    const ok = url.searchParams.has('code');
    answer(
      res,
      ok ? 200 : 400,
      ok ? 'Signed in' : 'Sign-in failed',
      'You can close this window and return to the terminal.',
    );
    resolveCallback(url);
  });
  const listening = new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(server.address().port)),
  );
  const timer = setTimeout(
    () => rejectCallback(new Error('no sign-in within the timeout')),
    Number(values.timeout) * 1000,
  );
  const close = () => {
    clearTimeout(timer);
    server.close();
    // The answer is sent with `connection: close`; a browser's spare idle socket must not keep us waiting.
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 1000).unref();
  };
  return { listening, callback: callback.finally(close) };
}

async function currentIdentity(accessToken) {
  const response = await client.fetchProtectedResource(
    config,
    accessToken,
    new URL('current-identity', apiBase),
    'GET',
  );
  if (!response.ok) throw new Error(`Edge API answered HTTP ${response.status}`);
  return (await response.json()).data;
}

/** The code flow with PKCE and a loopback redirect: needs a browser on this machine. */
async function signInWithBrowser() {
  const state = client.randomState();
  const { listening, callback } = loopback(state);
  const redirectUri = `http://127.0.0.1:${await listening}/auth/callback`;
  const codeVerifier = client.randomPKCECodeVerifier();
  const authorizationUrl = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
  });
  say('Open this URL in a browser to sign in:');
  // Always on stdout, alone on its line, for whoever opens it (a person, xdg-open, a test).
  console.log(authorizationUrl.href);

  return client.authorizationCodeGrant(config, await callback, {
    pkceCodeVerifier: codeVerifier,
    expectedState: state,
  });
}

/**
 * The device authorization grant (RFC 8628): the person signs in on another device. openid-client
 * polls every `interval` seconds, slows down by 5 s when told to, and gives up when the code
 * expires (or after --timeout).
 */
async function signInOnAnotherDevice() {
  const started = await client.initiateDeviceAuthorization(config, { scope: 'openid offline_access' });
  say(`On another device, open ${started.verification_uri} and enter the code ${started.user_code},`);
  say('or open this link (it carries the code):');
  // Always on stdout, alone on its line: the link to open, or to show as a QR code.
  console.log(started.verification_uri_complete);
  try {
    return await client.pollDeviceAuthorizationGrant(config, started, undefined, {
      signal: AbortSignal.timeout(Number(values.timeout) * 1000),
    });
  } catch (err) {
    if (err instanceof client.ResponseBodyError && err.error === 'access_denied')
      throw new Error('the sign-in was declined');
    if (err instanceof client.ResponseBodyError && err.error === 'expired_token')
      throw new Error('the code expired before the sign-in was confirmed');
    throw err;
  }
}

let tokens;
try {
  tokens = values.device ? await signInOnAnotherDevice() : await signInWithBrowser();
} catch (err) {
  console.error(`cli.js: ${err.message}`);
  process.exit(1);
}
const claims = tokens.claims();
const identity = await currentIdentity(tokens.access_token);
say(`Signed in as ${identity.name} (${identity.id}); the access token expires in ${tokens.expiresIn()} s.`);

const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token);
const again = await currentIdentity(refreshed.access_token);
say(`Refreshed: a new access token (and refresh token); the Edge API still answers for ${again.name}.`);

if (values.json) {
  console.log(
    JSON.stringify({
      identity: { id: identity.id, name: identity.name },
      subject: claims.sub,
      apiSession: claims.z_asid,
      refreshed: {
        newAccessToken: refreshed.access_token !== tokens.access_token,
        newRefreshToken: refreshed.refresh_token !== tokens.refresh_token,
        identityName: again.name,
      },
    }),
  );
}
