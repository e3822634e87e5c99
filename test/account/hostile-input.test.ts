import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser } from '../mfa/mfa-fixtures.js';
import { browserLike, csrfOf, signIn, type BrowserLike } from './account-fixtures.js';

describe('account page: hostile input is a 4xx, never a 5xx', () => {
  let server: TestServer;
  let browser: BrowserLike;
  let csrf: string;
  let origin: string;
  beforeAll(async () => {
    server = await startTestServer();
    origin = server.app.listeners[0]!.urls.find((u) => u.includes('localhost'))!;
    const user = await createUser(server, 'account-hostile');
    browser = browserLike({ baseUrl: origin, ca: server.ca });
    await signIn(browser, user.username, user.password);
    csrf = csrfOf((await browser.get('/account/')).text);
  });
  afterAll(() => server.close());

  const cookie = () => [...browser.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const raw = (path: string, body: string, contentType: string, extra: Record<string, string> = {}) =>
    browser.client.post(path, {
      body,
      headers: { cookie: cookie(), origin, 'content-type': contentType, ...extra },
    });

  test.each([
    ['/account/totp/verify', `csrf=${'CSRF'}&code=1&code=2`, 'application/x-www-form-urlencoded'],
    [
      '/account/totp/remove',
      `csrf=${'CSRF'}&remove-code=${'9'.repeat(5000)}`,
      'application/x-www-form-urlencoded',
    ],
    ['/account/sessions/end', `csrf=${'CSRF'}&session=%00`, 'application/x-www-form-urlencoded'],
    ['/account/passkeys/rename', `csrf=${'CSRF'}&id[a]=1&name-x=y`, 'application/x-www-form-urlencoded'],
    ['/account/passkeys/remove', `csrf=${'CSRF'}&id=${'x'.repeat(300)}`, 'application/x-www-form-urlencoded'],
    ['/account/logout', `csrf[]=${'CSRF'}`, 'application/x-www-form-urlencoded'],
    ['/account/totp/enroll', '<xml/>', 'application/xml'],
    ['/account/totp/enroll', `{"csrf":`, 'application/json'],
  ])('POST %s (hostile body %#)', async (path, body, type) => {
    const res = await raw(path, body.replaceAll('CSRF', csrf), type);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });

  test.each([
    [{ response: 'garbage', name: 'x' }],
    [
      {
        response: {
          id: 'AA',
          rawId: 'AA',
          type: 'public-key',
          response: { clientDataJSON: '!!', attestationObject: 'AA' },
        },
        name: 'x',
      },
    ],
    [{ name: ['x'] }],
    [{ name: 'x'.repeat(10_000), response: {} }],
  ])('the passkey script endpoint refuses hostile body %#', async (body) => {
    const res = await browser.client.post('/account/passkeys/register', {
      body,
      headers: { cookie: cookie(), origin, 'x-csrf-token': csrf },
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body.error.code).toBeTruthy();
  });

  test.each([
    ['a repeated code', '/account/callback?code=a&code=b&state=s'],
    ['a huge code', `/account/callback?code=${'a'.repeat(5000)}&state=s`],
    ['an error', '/account/callback?error=access_denied'],
    ['nothing', '/account/callback'],
  ])('a callback with %s', async (_what, path) => {
    const res = await browser.client.get(path, {
      headers: { cookie: 'hostile=1; __Host-svc-account-login=%00' },
    });
    expect(res.status).toBe(400);
    expect(res.header('content-type')).toContain('text/html');
  });

  test('a hostile Host header adds nothing to the CSP of the passkeys page', async () => {
    const plain = await browser.get('/account/passkeys');
    const host = new URL(origin).host;
    expect(plain.header('content-security-policy')).toContain(
      `script-src https://${host}/account/passkeys.js`,
    );

    const res = await browser.client.get('/account/passkeys', {
      headers: { cookie: cookie(), host: `${host} 'unsafe-inline' https://evil.example` },
    });
    expect(res.status).toBeLessThan(500);
    const csp = res.header('content-security-policy') ?? '';
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('evil.example');
    expect(csp).not.toContain('script-src');
  });
});
