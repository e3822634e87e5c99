import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createSecretBox } from '../../src/crypto/secret-box.js';
import { startTestServer, ADMIN_PASSWORD, ADMIN_USERNAME, type TestServer } from '../helpers/test-server.js';
import { newPkce } from '../helpers/oidc-client.js';
import { managementApi } from '../identities/identity-fixtures.js';
import { browserOn, csrfOf, signIn, type BrowserLike } from './account-fixtures.js';

const MASTER_KEY = 'c3ZjLXRlc3QtbWFzdGVyLWtleS0zMi1ieXRlcy0hISE=';
const box = createSecretBox(Buffer.from(MASTER_KEY, 'base64'));

interface SessionRow {
  id_hash: string;
  api_session_id: string;
  tokens_sealed: string;
  tokens_version: number;
  access_expires_at: Date;
}

describe('account page sign-in', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const rows = (): Promise<SessionRow[]> => server.app.knex('account_sessions').where({ kind: 'session' });
  const tokensOf = (row: SessionRow) =>
    JSON.parse(box.open(row.tokens_sealed)) as { accessToken: string; refreshToken: string };

  async function signedIn(): Promise<{ browser: BrowserLike; row: SessionRow; overview: string }> {
    const before = new Set((await rows()).map((r) => r.id_hash));
    const browser = browserOn(server);
    const overview = await signIn(browser, ADMIN_USERNAME, ADMIN_PASSWORD);
    const row = (await rows()).find((r) => !before.has(r.id_hash))!;
    return { browser, row, overview: overview.text };
  }

  test('a person signs in with a password on the login page and sees their identity', async () => {
    const browser = browserOn(server);
    const start = await browser.get('/account/');
    expect(start.status).toBe(200);
    expect(start.text).toContain('<form method="post" action="/account/login">');
    const overview = await signIn(browser, ADMIN_USERNAME, ADMIN_PASSWORD);
    // The browser itself went to the authorization endpoint, the login page and the callback.
    expect(overview.visited[0]).toBe('POST /oidc/login/username');
    expect(overview.visited.slice(-2)).toEqual(['GET /account/callback', 'GET /account/']);
    expect(overview.text).toContain(`<dd>${ADMIN_USERNAME}</dd>`);
    expect(overview.text).toContain('<dt>Type</dt>');
    const cookie = browser.jar.get('__Host-svc-account')!;
    expect(cookie).toBeTruthy();
    expect(browser.jar.has('__Host-svc-account-login')).toBe(false);
  });

  test('the cookies are HttpOnly and Secure; the login one Lax, the session one Strict', async () => {
    const browser = browserOn(server);
    const started = await browser.client.post('/account/login', {
      headers: { origin: new URL(server.url).origin },
    });
    expect(started.status).toBe(303);
    const login = started.headerAll('set-cookie').find((c) => c.startsWith('__Host-svc-account-login='))!;
    expect(login).toMatch(/; path=\/;/);
    expect(login).toMatch(/; samesite=lax/);
    expect(login).toMatch(/; secure/);
    expect(login).toMatch(/; httponly/);
    const { browser: signedInBrowser } = await signedIn();
    const session = signedInBrowser.setCookies.find((c) => c.startsWith('__Host-svc-account='))!;
    expect(session).toMatch(/; path=\/;/);
    expect(session).toMatch(/; samesite=strict/);
    expect(session).toMatch(/; secure/);
    expect(session).toMatch(/; httponly/);
    expect(session).not.toMatch(/domain=/i);
  });

  test('no token reaches the browser: not in pages, cookies or redirects', async () => {
    const { browser, row, overview } = await signedIn();
    const { accessToken, refreshToken } = tokensOf(row);
    const pages = [
      overview,
      (await browser.get('/account/totp')).text,
      (await browser.get('/account/sessions')).text,
    ];
    for (const text of pages) {
      expect(text).not.toContain(accessToken);
      expect(text).not.toContain(refreshToken);
      expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
    }
    for (const value of browser.jar.values()) {
      expect(value).not.toContain(accessToken.slice(0, 20));
      expect(value).not.toBe(row.id_hash);
    }
  });

  test('an expired access token is refreshed on the server, and the page keeps working', async () => {
    const { browser, row } = await signedIn();
    const before = tokensOf(row);
    await server.app
      .knex('account_sessions')
      .where({ id_hash: row.id_hash })
      .update({ access_expires_at: new Date(Date.now() - 60_000) });
    const page = await browser.get('/account/');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<dd>${ADMIN_USERNAME}</dd>`);
    const after = (await rows()).find((r) => r.id_hash === row.id_hash)!;
    expect(after.tokens_version).toBe(row.tokens_version + 1);
    expect(new Date(after.access_expires_at).getTime()).toBeGreaterThan(Date.now());
    const refreshed = tokensOf(after);
    expect(refreshed.refreshToken).not.toBe(before.refreshToken);
    expect(refreshed.accessToken).not.toBe(before.accessToken);
    // Same API session: the refresh continued the sign-in, it did not make a new one.
    expect(after.api_session_id).toBe(row.api_session_id);
  });

  test('requests arriving together while the access token is expired refresh it once', async () => {
    const { browser, row } = await signedIn();
    await server.app
      .knex('account_sessions')
      .where({ id_hash: row.id_hash })
      .update({ access_expires_at: new Date(Date.now() - 60_000) });
    const pages = await Promise.all([1, 2, 3, 4].map(() => browser.get('/account/')));
    for (const page of pages) expect(page.text).toContain(`<dd>${ADMIN_USERNAME}</dd>`);
    const after = (await rows()).find((r) => r.id_hash === row.id_hash)!;
    // One refresh: a second presentation of the same refresh token would have ended the grant.
    expect(after.tokens_version).toBe(row.tokens_version + 1);
    expect((await browser.get('/account/sessions')).text).toContain('This browser');
  });

  test('sign out ends the page session and its API session; the old cookie no longer works', async () => {
    const { browser, row, overview } = await signedIn();
    const api = managementApi(server, await server.adminToken());
    expect((await api.get(`/api-sessions/${row.api_session_id}`)).status).toBe(200);
    const cookie = browser.jar.get('__Host-svc-account')!;
    const out = await browser.post('/account/logout', { csrf: csrfOf(overview) });
    expect(out.status).toBe(200);
    expect(out.text).toContain('You are signed out.');
    expect(browser.jar.has('__Host-svc-account')).toBe(false);
    expect((await api.get(`/api-sessions/${row.api_session_id}`)).status).toBe(404);
    expect((await rows()).some((r) => r.id_hash === row.id_hash)).toBe(false);
    browser.jar.set('__Host-svc-account', cookie);
    const replay = await browser.get('/account/sessions');
    expect(replay.url).toMatch(/\/account\/$/);
    expect(replay.text).toContain('<form method="post" action="/account/login">');
  });

  test('a callback is honoured once, and only with the state and the cookie of its sign-in', async () => {
    const browser = browserOn(server);
    // Follow the sign-in by hand up to the callback.
    const origin = new URL(server.url).origin;
    const started = await browser.client.post('/account/login', { headers: { origin } });
    const loginCookie = started.headerAll('set-cookie')[0]!.split(';')[0]!;
    const page = await browser.client.get(started.header('location')!, { headers: { accept: 'text/html' } });
    const loginPage = await browser.client.get(page.header('location')!, {
      headers: { accept: 'text/html' },
    });
    const action = /<form method="post" action="([^"]+)"/.exec(loginPage.text)![1]!;
    const authRequestId = /name="authRequestId" value="([^"]+)"/.exec(loginPage.text)![1]!;
    const done = await browser.client.post(action, {
      form: { authRequestId, username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
      headers: { origin, accept: 'text/html' },
    });
    const callback = new URL(done.header('location')!);
    expect(callback.pathname).toBe('/account/callback');
    const state = callback.searchParams.get('state')!;

    const wrongState = new URL(callback);
    // Another first character (a fixed one would equal the real state once in 64 runs).
    wrongState.searchParams.set('state', (state.startsWith('x') ? 'y' : 'x') + state.slice(1));
    const noCookie = await browser.client.get(callback.toString());
    expect(noCookie.status).toBe(400);
    const forged = await browser.client.get(wrongState.toString(), { headers: { cookie: loginCookie } });
    expect(forged.status).toBe(400);
    // The forged attempt consumed the sign-in: the real callback cannot complete it either.
    const late = await browser.client.get(callback.toString(), { headers: { cookie: loginCookie } });
    expect(late.status).toBe(400);
    expect(late.text).toContain('the sign-in could not be completed');
    expect(late.headerAll('set-cookie').some((c) => c.startsWith('__Host-svc-account='))).toBe(false);
  });

  test('the callback exception opens exactly https://<address>/account/callback and nothing else', async () => {
    const base = new URL(server.url);
    const authorize = (redirectUri: string) => {
      const pkce = newPkce();
      const q = new URLSearchParams({
        response_type: 'code',
        client_id: 'svc',
        redirect_uri: redirectUri,
        scope: 'openid',
        state: 's',
        nonce: 'n',
        code_challenge: pkce.challenge,
        code_challenge_method: 'S256',
      });
      return server.client.get(`/oidc/authorization?${q}`);
    };
    const own = `https://${base.host}/account/callback`;
    expect((await authorize(own)).status).toBe(303);
    const otherPort = Number(base.port) === 65535 ? 65534 : Number(base.port) + 1;
    for (const uri of [
      `${own}/`,
      `${own}?next=https://attacker.example/`,
      `${own}#x`,
      `https://${base.host}/account/callbacks`,
      `https://${base.host}/account/`,
      `http://${base.host}/account/callback`,
      `https://${base.hostname}:${otherPort}/account/callback`,
      `https://${base.hostname}/account/callback`,
      'https://attacker.example/account/callback',
      `https://attacker.example:${base.port}/account/callback`,
    ]) {
      const res = await authorize(uri);
      expect({ uri, status: res.status, error: res.body?.error }).toEqual({
        uri,
        status: 400,
        error: 'invalid_redirect_uri',
      });
    }
  });
});
