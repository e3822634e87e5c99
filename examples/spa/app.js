// The single-page app: Authorization Code Flow with PKCE in the browser through oidc-client-ts
// (its browser bundle defines the global `oidc`). Tokens stay in this tab's sessionStorage.
/* global oidc */
const { UserManager, WebStorageStateStore } = oidc;
const config = await (await fetch('/config.json')).json();
const $ = (id) => document.getElementById(id);

// docs/integrating.md shows these settings word for word (test/delivery/integration-snippets.test.ts).
const manager = new UserManager({
  authority: config.authority,
  client_id: config.clientId,
  redirect_uri: `${location.origin}/auth/callback`,
  post_logout_redirect_uri: `${location.origin}/auth/logout`,
  response_type: 'code',
  // offline_access: a refresh token, so the app can renew its access token without a redirect.
  scope: 'openid offline_access',
  // Reads the name from /oidc/userinfo: a cross-origin call with the access token.
  loadUserInfo: true,
  // Renews only when the app calls signinSilent, which then uses the refresh token.
  automaticSilentRenew: false,
  userStore: new WebStorageStateStore({ store: sessionStorage }),
});

function status(text) {
  $('status').textContent = text;
}

/** Calls the Edge API with the access token, as any API client of the controller does. */
async function showIdentity(user) {
  const response = await fetch(new URL('current-identity', config.api), {
    headers: { authorization: `Bearer ${user.access_token}` },
  });
  $('api-result').textContent = `HTTP ${response.status}\n${JSON.stringify(await response.json(), null, 2)}`;
  $('identity-name').textContent = user.profile.name ?? user.profile.sub;
  $('expires-at').textContent = new Date(user.expires_at * 1000).toISOString();
  $('signed-in').hidden = false;
  $('signed-out').hidden = true;
}

$('sign-in').addEventListener('click', () => manager.signinRedirect());
$('sign-out').addEventListener('click', () => manager.signoutRedirect());
$('refresh').addEventListener('click', async () => {
  // With a refresh token, signinSilent uses the refresh_token grant at the token endpoint.
  const user = await manager.signinSilent();
  await showIdentity(user);
  status('Tokens refreshed.');
});
$('check-cors').addEventListener('click', async () => {
  const tokenEndpoint = `${config.authority}/token`;
  try {
    const response = await fetch(tokenEndpoint, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: 'not-a-token',
        client_id: config.clientId,
      }),
    });
    const body = await response.json();
    $('cors-result').textContent =
      `Allowed: the token endpoint answered HTTP ${response.status} (${body.error}).`;
  } catch {
    $('cors-result').textContent = 'Refused: the browser blocked the answer of the token endpoint (CORS).';
  }
});

try {
  let signedOut = false;
  if (location.pathname === '/auth/callback') {
    await manager.signinRedirectCallback();
    history.replaceState(null, '', '/');
  } else if (location.pathname === '/auth/logout') {
    await manager.signoutRedirectCallback();
    history.replaceState(null, '', '/');
    signedOut = true;
  }
  const user = await manager.getUser();
  if (user && !user.expired) {
    await showIdentity(user);
    status('Signed in.');
  } else {
    $('signed-out').hidden = false;
    status(signedOut ? 'Signed out.' : 'Not signed in.');
  }
} catch (err) {
  status(`Error: ${err.message}`);
  $('signed-out').hidden = false;
}
