// examples/web-app as a plain HTTP client sees it (the Chromium flow is test/browser/web-app.test.ts):
// the headers of its pages, and sign-ins in progress kept by the browser, not by the app.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import { runExample, writeCaFile, type ExampleProcess } from '../helpers/example-process.js';
import { followToCallback } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser } from '../mfa/mfa-fixtures.js';

/** The example's session cookie and its sealed sign-in cookie (examples/web-app/server.js). */
const SESSION_COOKIE = 'webapp.sid';
const SIGN_IN_COOKIE = 'webapp.signin';
/** More than the example ever kept server-side before the sign-in moved into a cookie. */
const FLOOD = 1001;

describe('examples/web-app over plain HTTP', () => {
  let server: TestServer;
  let app: ExampleProcess;
  let appUrl: string;
  const cookieKey = randomBytes(32).toString('base64');
  const startApp = (env: Record<string, string> = {}) =>
    runExample('web-app/server.js', [], {
      SVC_ISSUER: `${server.url}/oidc`,
      PORT: '0',
      WEB_APP_COOKIE_KEY: cookieKey,
      NODE_EXTRA_CA_CERTS: writeCaFile(server.dataDir, server.ca),
      ...env,
    });
  beforeAll(async () => {
    server = await startTestServer();
    app = startApp();
    appUrl = await app.line(/listening on (http\S+)/);
  });
  afterAll(async () => {
    await app?.stop();
    await server?.close();
  });

  // The browser's view: no redirects followed, cookies sent by hand.
  const fetchApp = (path: string, cookies: Record<string, string> = {}, base = appUrl) =>
    fetch(new URL(path, base), {
      redirect: 'manual',
      headers: {
        cookie: Object.entries(cookies)
          .map(([name, value]) => `${name}=${value}`)
          .join('; '),
      },
    });
  const setCookieOf = (res: Response, name: string) =>
    res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  const cookieValueOf = (res: Response, name: string) =>
    setCookieOf(res, name)
      ?.slice(name.length + 1)
      .split(';')[0];
  const startSignIn = async () => {
    const res = await fetchApp('/login');
    expect(res.status).toBe(302);
    return { signIn: cookieValueOf(res, SIGN_IN_COOKIE)!, authorization: res.headers.get('location')! };
  };
  /** The user signs in at the controller; the path (and query) of the callback the browser is sent to. */
  const signInAtController = async (authorization: string, user: { username: string; password: string }) => {
    const res = await server.client.get(authorization);
    expect(res.status).toBe(303);
    const loginPage = new URL(res.header('location')!, server.url);
    const submitted = await server.client.post(loginPage.pathname, {
      body: { authRequestId: loginPage.searchParams.get('authRequestID'), ...user },
    });
    const { location } = await followToCallback(server.client, submitted, `${appUrl}/auth/callback`);
    const callback = new URL(location);
    return `${callback.pathname}${callback.search}`;
  };
  const signedInAs = async (sessionId: string) =>
    /Signed in as <strong[^>]*>([^<]*)/.exec(
      await (await fetchApp('/', { [SESSION_COOKIE]: sessionId })).text(),
    )?.[1];

  test('every page forbids framing and script: a strict CSP and X-Frame-Options DENY', async () => {
    const start = await fetchApp('/');
    const signedOut = await fetchApp('/auth/logout');
    const noSignIn = await fetchApp('/auth/callback?code=x&state=y');
    expect([start.status, signedOut.status, noSignIn.status]).toEqual([200, 200, 400]);

    for (const res of [start, signedOut, noSignIn]) {
      const html = await res.text();
      const csp = res.headers.get('content-security-policy') ?? '';
      const directives = Object.fromEntries(
        csp.split(';').map((d) => {
          const [name, ...values] = d.trim().split(/\s+/);
          return [name, values.join(' ')];
        }),
      );
      const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
      expect(directives).toEqual({
        'default-src': "'none'",
        'style-src': `'sha256-${createHash('sha256').update(style).digest('base64')}'`,
        'img-src': 'data:',
        'form-action': `'self' ${new URL(server.url).origin}`,
        'frame-ancestors': "'none'",
        'base-uri': "'none'",
      });
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(html).not.toMatch(/<script|\son\w+=/i);
    }
  });

  test('the sign-in cookie is sealed, HttpOnly, SameSite=Lax, sent only to the callback, for ten minutes', async () => {
    const res = await fetchApp('/login');
    const cookie = setCookieOf(res, SIGN_IN_COOKIE)!;
    expect(cookie).toMatch(/;\s*httponly(;|$)/i);
    expect(cookie).toMatch(/;\s*samesite=lax(;|$)/i);
    expect(cookie).toMatch(/;\s*path=\/auth\/callback(;|$)/i);
    expect(cookie).toMatch(/;\s*max-age=600(;|$)/i);
    // Nothing of the sign-in (its state, say) can be read from the cookie.
    const state = new URL(res.headers.get('location')!).searchParams.get('state')!;
    const value = cookieValueOf(res, SIGN_IN_COOKIE)!;
    expect(Buffer.from(value, 'base64url').toString('latin1')).not.toContain(state);
    // No server-side session is made for someone who only started a sign-in.
    expect(setCookieOf(res, SESSION_COOKIE)).toBeUndefined();
  });

  test('a flood of sign-ins started by others does not end a sign-in in progress', async () => {
    const victim = await createUser(server, 'web-app-flood-victim');
    const started = await startSignIn();
    for (let i = 0; i < FLOOD; i += 50) {
      await Promise.all(Array.from({ length: 50 }, () => fetchApp('/login').then((r) => r.arrayBuffer())));
    }

    const callback = await signInAtController(started.authorization, victim);
    const signedIn = await fetchApp(callback, { [SIGN_IN_COOKIE]: started.signIn });
    expect(signedIn.status).toBe(302);
    expect(await signedInAs(cookieValueOf(signedIn, SESSION_COOKIE)!)).toBe(victim.name);
    // The sign-in cookie is used up: cleared by the answer that completes it.
    expect(setCookieOf(signedIn, SIGN_IN_COOKIE)).toMatch(/^webapp\.signin=;.*max-age=0/i);
  });

  test('the app keeps no sign-in in progress: another process with the same key completes it', async () => {
    const user = await createUser(server, 'web-app-stateless');
    const started = await startSignIn();
    const other = startApp({ APP_URL: appUrl });
    try {
      const otherUrl = await other.line(/listening on (http\S+)/);
      const callback = await signInAtController(started.authorization, user);
      const signedIn = await fetchApp(callback, { [SIGN_IN_COOKIE]: started.signIn }, otherUrl);
      expect(signedIn.status).toBe(302);
      const page = await (
        await fetchApp('/', { [SESSION_COOKIE]: cookieValueOf(signedIn, SESSION_COOKIE)! }, otherUrl)
      ).text();
      expect(page).toContain(`Signed in as <strong id="identity-name">${user.name}</strong>`);
    } finally {
      await other.stop();
    }
  });

  test('an altered or foreign sign-in cookie is refused before the code is redeemed', async () => {
    const user = await createUser(server, 'web-app-tampered');
    const started = await startSignIn();
    const callback = await signInAtController(started.authorization, user);
    const bytes = Buffer.from(started.signIn, 'base64url');
    bytes[20]! ^= 1;
    const foreign = startApp({ WEB_APP_COOKIE_KEY: randomBytes(32).toString('base64') });
    try {
      const foreignUrl = await foreign.line(/listening on (http\S+)/);
      for (const [value, base] of [
        [bytes.toString('base64url'), appUrl],
        ['', appUrl],
        // Sealed with another key: the other process refuses this app's cookie.
        [started.signIn, foreignUrl],
      ] as const) {
        const refused = await fetchApp(callback, { [SIGN_IN_COOKIE]: value }, base);
        expect(refused.status).toBe(400);
        expect(await refused.text()).toContain('No sign-in is in progress.');
      }
    } finally {
      await foreign.stop();
    }
    // The code was not redeemed: the untouched cookie still completes the sign-in.
    const signedIn = await fetchApp(callback, { [SIGN_IN_COOKIE]: started.signIn });
    expect(signedIn.status).toBe(302);
    expect(await signedInAs(cookieValueOf(signedIn, SESSION_COOKIE)!)).toBe(user.name);
  });

  test('a session id planted in the browser is never the signed-in one', async () => {
    const user = await createUser(server, 'web-app-fixation');
    const started = await startSignIn();
    const callback = await signInAtController(started.authorization, user);
    const planted = 'planted-by-someone-else';
    const signedIn = await fetchApp(callback, {
      [SESSION_COOKIE]: planted,
      [SIGN_IN_COOKIE]: started.signIn,
    });
    expect(signedIn.status).toBe(302);
    const signedInId = cookieValueOf(signedIn, SESSION_COOKIE)!;
    expect(signedInId).not.toBe(planted);
    expect(await signedInAs(signedInId)).toBe(user.name);
    expect(await signedInAs(planted)).toBeUndefined();
  });
});
