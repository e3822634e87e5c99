// examples/web-app as a plain HTTP client sees it (the Chromium flow is test/browser/web-app.test.ts):
// the headers of its pages, and how many unfinished sign-ins it keeps.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { runExample, writeCaFile, type ExampleProcess } from '../helpers/example-process.js';
import { followToCallback } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser } from '../mfa/mfa-fixtures.js';

/** The example's session cookie (examples/web-app/server.js). */
const SESSION_COOKIE = 'webapp.sid';
const MAX_PENDING = 3;

describe('examples/web-app over plain HTTP', () => {
  let server: TestServer;
  let app: ExampleProcess;
  let appUrl: string;
  beforeAll(async () => {
    server = await startTestServer();
    app = runExample('web-app/server.js', [], {
      SVC_ISSUER: `${server.url}/oidc`,
      PORT: '0',
      MAX_PENDING_SIGN_INS: String(MAX_PENDING),
      NODE_EXTRA_CA_CERTS: writeCaFile(server.dataDir, server.ca),
    });
    appUrl = await app.line(/listening on (http\S+)/);
  });
  afterAll(async () => {
    await app?.stop();
    await server?.close();
  });

  // The browser's view: no redirects followed, the session cookie sent by hand.
  const fetchApp = (path: string, sessionId?: string) =>
    fetch(new URL(path, appUrl), {
      redirect: 'manual',
      headers: sessionId ? { cookie: `${SESSION_COOKIE}=${sessionId}` } : {},
    });
  const sessionIdOf = (res: Response) =>
    res.headers
      .getSetCookie()
      .find((c) => c.startsWith(`${SESSION_COOKIE}=`))!
      .slice(SESSION_COOKIE.length + 1)
      .split(';')[0]!;
  const startSignIn = async () => {
    const res = await fetchApp('/login');
    expect(res.status).toBe(302);
    return { id: sessionIdOf(res), authorization: res.headers.get('location')! };
  };

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

  test('unfinished sign-ins are bounded: the oldest is dropped for a new one, the newest still completes', async () => {
    const user = await createUser(server, 'web-app-bound');
    const oldest = await startSignIn();
    const rest = [];
    for (let i = 0; i < MAX_PENDING; i++) rest.push(await startSignIn());
    const newest = rest.at(-1)!;

    // The oldest was dropped: its callback finds no sign-in.
    const dropped = await fetchApp('/auth/callback?code=x&state=y', oldest.id);
    expect(dropped.status).toBe(400);
    expect(await dropped.text()).toContain('No sign-in is in progress.');

    // The newest signs in through the controller as usual.
    const authorization = await server.client.get(newest.authorization);
    expect(authorization.status).toBe(303);
    const loginPage = new URL(authorization.header('location')!, server.url);
    const submitted = await server.client.post(loginPage.pathname, {
      body: {
        authRequestId: loginPage.searchParams.get('authRequestID'),
        username: user.username,
        password: user.password,
      },
    });
    const callback = await followToCallback(server.client, submitted, `${appUrl}/auth/callback`);
    const signedIn = await fetchApp(callback.location, newest.id);
    expect(signedIn.status).toBe(302);
    const page = await (await fetchApp('/', sessionIdOf(signedIn))).text();
    expect(page).toContain(`Signed in as <strong id="identity-name">${user.name}</strong>`);

    // Signed-in sessions do not count against the bound: more sign-ins leave it signed in.
    for (let i = 0; i < MAX_PENDING + 1; i++) await startSignIn();
    expect(await (await fetchApp('/', sessionIdOf(signedIn))).text()).toContain('Signed in as');
  });
});
