// A device's tokens go to whoever polls its device code. Someone who starts a device flow and
// confirms its code must not be able to send the login page that follows to someone else, have
// them sign in, and poll that person's tokens: the login of a device continues only in the browser
// that confirmed the code, and every page of it names the device's code.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectError } from '../helpers/expect-error.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { managementApi } from '../identities/identity-fixtures.js';
import { createPolicy, createUser, enrollTotp } from '../second-factors/factor-fixtures.js';
import {
  authRequestIdOf,
  confirmCode,
  cookieJar,
  deviceClient,
  headingOf,
  pollOnce,
  startDevice,
  type Browser,
} from './device-fixtures.js';

const HTML = { accept: 'text/html' };
const DEVICE_LINE = (code: string) => `Signing in the device showing <span class="usercode">${code}</span>`;

describe('a device’s login belongs to the browser that confirmed its code', () => {
  let server: TestServer;
  let device: Awaited<ReturnType<typeof deviceClient>>;
  beforeAll(async () => {
    server = await startTestServer();
    device = await deviceClient(server);
  });
  afterAll(async () => {
    await device.close();
    await server.close();
  });

  /** The attacker's side: a device flow started, its code confirmed in their own browser. */
  async function confirmedByAttacker() {
    const started = await startDevice(device.config);
    const attacker = cookieJar(server.client);
    const { login } = await confirmCode(attacker, started.verification_uri_complete!);
    expect(login.status).toBe(303);
    const link = new URL(login.header('location')!, server.url);
    return { started, attacker, login, link, authRequestId: authRequestIdOf(login) };
  }

  /** The cookie of the login the confirmation set (name and value). */
  const bindingCookieOf = (browser: Browser) =>
    [...browser.cookies].find(([name]) => name.startsWith('svc_device_login_'))!;

  test('the confirmation sets a short-lived httpOnly, Secure, SameSite=Lax cookie for the login paths only', async () => {
    const { login } = await confirmedByAttacker();
    const cookie = login.headerAll('set-cookie').find((c) => c.startsWith('svc_device_login_'))!;

    expect(cookie).toMatch(/; path=\/oidc\/login(;|$)/i);
    expect(cookie).toMatch(/; httponly/i);
    expect(cookie).toMatch(/; secure/i);
    expect(cookie).toMatch(/; samesite=lax/i);
    const expires = new Date(/expires=([^;]+)/i.exec(cookie)![1]!).getTime();
    expect(expires - Date.now()).toBeLessThanOrEqual(600_000);
  });

  test('a fresh browser opening the link sent to it gets a page that says why, and no sign-in form', async () => {
    const { link } = await confirmedByAttacker();
    const victim = cookieJar(server.client);

    const page = await victim.get(link.pathname + link.search, { headers: HTML });

    expect(page.status).toBe(400);
    expect(page.header('content-security-policy')).toContain("default-src 'none'");
    expect(headingOf(page.text)).toBe('Sign-in not available here');
    expect(page.text).toContain('do not sign in');
    expect(page.text).not.toContain('name="password"');
  });

  test('a second browser, without the cookie or with another one, cannot sign the device in; the device gets nothing', async () => {
    const { started, attacker, link, authRequestId } = await confirmedByAttacker();
    const [name, value] = bindingCookieOf(attacker);
    // The cookie of another device's confirmation, moved to this login's name.
    const other = await confirmedByAttacker();
    const [, otherValue] = bindingCookieOf(other.attacker);
    const forged = `${value.split('.')[0]}.${'A'.repeat(43)}`;
    const credentials = { authRequestId, username: ADMIN_USERNAME, password: ADMIN_PASSWORD };

    const victims: [string, Record<string, string>][] = [
      ['no cookie', {}],
      ['another login’s cookie', { cookie: `${name}=${otherValue}` }],
      ['a forged cookie', { cookie: `${name}=${forged}` }],
      [
        'the cookie of another login under its own name',
        { cookie: bindingCookieOf(other.attacker).join('=') },
      ],
    ];
    for (const [what, headers] of victims) {
      const form = await server.client.post(link.pathname, {
        form: credentials,
        headers: { ...HTML, ...headers },
      });
      expect([what, form.status, headingOf(form.text)]).toEqual([what, 400, 'Sign-in not available here']);
      // The JSON login API answers the envelope.
      const api = await server.client.post('/oidc/login/password', { body: credentials, headers });
      expectError(api, { status: 400, code: 'INVALID_AUTH_REQUEST' });
    }
    // Every other step of the login refuses too.
    for (const [method, path] of [
      ['GET', '/oidc/login/auth-queries'],
      ['GET', '/oidc/login/totp'],
      ['POST', '/oidc/login/totp'],
      ['GET', '/oidc/login/totp/enroll'],
      ['POST', '/oidc/login/totp/enroll'],
      ['DELETE', '/oidc/login/totp/enroll'],
      ['POST', '/oidc/login/totp/enroll/verify'],
      ['POST', '/oidc/login/cert'],
      ['POST', '/oidc/login/ext-jwt'],
      ['GET', '/oidc/login/cert'],
    ] as const) {
      const res =
        method === 'GET'
          ? await server.client.get(`${path}?authRequestID=${authRequestId}`)
          : await server.client.request(method, path, { body: { authRequestId, code: '123456' } });
      expect([method, path, res.status, res.body?.error?.code]).toEqual([
        method,
        path,
        400,
        'INVALID_AUTH_REQUEST',
      ]);
    }

    const poll = await pollOnce(server.client, started.device_code);
    expect(poll.status).toBe(400);
    expect(poll.body.error).toBe('authorization_pending');
  });

  test('the confirming browser signs in, and every page of its login names the device’s code', async () => {
    const api = managementApi(server, await server.adminToken());
    const policy = await createPolicy(api, 'device-login-totp', { secondary: { requireTotp: true } });
    const user = await createUser(server, 'device-login-person', policy);
    const enrolled = await enrollTotp(server, user);
    const { started, attacker: person, link, authRequestId } = await confirmedByAttacker();

    const loginPage = await person.get(link.pathname + link.search, { headers: HTML });
    expect(loginPage.status).toBe(200);
    expect(loginPage.text).toContain(DEVICE_LINE(started.user_code));
    const wrong = await person.post(link.pathname, {
      form: { authRequestId, username: user.username, password: 'not-it' },
      headers: HTML,
    });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain(DEVICE_LINE(started.user_code));
    const totpPage = await person.post(link.pathname, {
      form: { authRequestId, username: user.username, password: user.password },
      headers: HTML,
    });
    expect(headingOf(totpPage.text)).toBe('Two-step verification');
    expect(totpPage.text).toContain(DEVICE_LINE(started.user_code));
    const done = await person.post('/oidc/login/totp', {
      form: { authRequestId, code: await totpCode(enrolled.url, Math.max(enrolled.step + 1, timeStepAt())) },
      headers: HTML,
    });

    expect(done.status).toBe(200);
    expect(headingOf(done.text)).toBe('Device signed in');
    const poll = await pollOnce(server.client, started.device_code);
    expect(poll.status).toBe(200);
    expect(typeof poll.body.access_token).toBe('string');
  });
});
