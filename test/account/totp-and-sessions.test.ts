import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { enrolledUpdbUser, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { createIdp, createPolicy } from '../second-factors/factor-fixtures.js';
import { browserOn, csrfOf, inputValue, signIn, type BrowserLike } from './account-fixtures.js';

describe('account page: authenticator app, sessions, CSRF', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  async function signedInUser(name: string): Promise<{ browser: BrowserLike; password: string; id: string }> {
    const user = await enrolledUpdbUser(server, api, name);
    const browser = browserOn(server);
    await signIn(browser, user.username, user.password);
    return { browser, password: user.password, id: user.id };
  }

  test('enroll with the QR code, verify, make new recovery codes, remove', async () => {
    const { browser } = await signedInUser('account-totp');
    const none = await browser.get('/account/totp');
    expect(none.text).toContain('Set up an authenticator app');

    const enrolling = await browser.post('/account/totp/enroll', { csrf: csrfOf(none.text) });
    expect(enrolling.status).toBe(200);
    expect(enrolling.text).toMatch(/<img class="qr" src="data:image\/png;base64,/);
    const secret = /<code id="totp-secret">([A-Z2-7]+)<\/code>/.exec(enrolling.text)![1]!;
    const recovery = [...enrolling.text.matchAll(/<li><code>([^<]+)<\/code><\/li>/g)].map((m) => m[1]!);
    expect(recovery.length).toBeGreaterThan(0);

    // Reloaded, the page shows the QR code again but never the recovery codes.
    const reloaded = await browser.get('/account/totp');
    expect(reloaded.text).toContain('totp-secret');
    expect(reloaded.text).not.toContain(recovery[0]);

    const wrong = await browser.post('/account/totp/verify', { csrf: csrfOf(reloaded.text), code: '000000' });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toMatch(/<input id="code"[^>]*aria-invalid="true"[^>]*aria-describedby="form-error"/);
    expect(wrong.text).toContain('<title>Error: Authenticator app');

    const step = timeStepAt();
    const on = await browser.post('/account/totp/verify', {
      csrf: csrfOf(wrong.text),
      code: await totpCode(secret, step),
    });
    expect(on.status).toBe(200);
    expect(on.url).toContain('/account/totp?done=totp-on');
    expect(on.text).toContain('Your authenticator app is on');

    const renewed = await browser.post('/account/totp/recovery-codes', {
      csrf: csrfOf(on.text),
      'regenerate-code': await totpCode(secret, step + 1),
    });
    expect(renewed.status).toBe(200);
    const fresh = [...renewed.text.matchAll(/<li><code>([^<]+)<\/code><\/li>/g)].map((m) => m[1]!);
    expect(fresh.length).toBe(recovery.length);
    expect(fresh).not.toContain(recovery[0]);

    // An old recovery code no longer removes it; a new one does.
    const refused = await browser.post('/account/totp/remove', {
      csrf: csrfOf(renewed.text),
      'remove-code': recovery[0]!,
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toMatch(/<input id="remove-code"[^>]*aria-invalid="true"/);
    const removed = await browser.post('/account/totp/remove', {
      csrf: csrfOf(refused.text),
      'remove-code': fresh[0]!,
    });
    expect(removed.url).toContain('done=totp-removed');
    expect(removed.text).toContain('Set up an authenticator app');
  });

  test('the sessions page lists the identity’s sessions; ending one signs that browser out', async () => {
    const { browser: a, password } = await signedInUser('account-sessions');
    const b = browserOn(server);
    await signIn(b, 'account-sessions', password);

    const page = await a.get('/account/sessions');
    // The API session of the user's enrollment login, this browser's, and the other browser's.
    const items = page.text.split('<li><h2>').slice(1);
    expect(items).toHaveLength(3);
    expect(items.filter((i) => i.startsWith('This browser'))).toHaveLength(1);
    const other = items.find((i) => i.startsWith('OpenID Connect sign-in'))!;
    const otherId = inputValue(other, 'session')!;

    const ended = await a.post('/account/sessions/end', { csrf: csrfOf(page.text), session: otherId });
    expect(ended.url).toContain('done=session-ended');
    expect(ended.text.split('<li><h2>').slice(1)).toHaveLength(2);
    // B's page session went with its API session.
    const bAfter = await b.get('/account/');
    expect(bAfter.text).toContain('<form method="post" action="/account/login">');

    // Ending one's own session signs out.
    const own = inputValue(
      ended.text.split('<li><h2>').find((i) => i.startsWith('This browser'))!,
      'session',
    )!;
    const out = await a.post('/account/sessions/end', { csrf: csrfOf(ended.text), session: own });
    expect(out.text).toContain('You are signed out.');
    expect((await a.get('/account/sessions')).url).toMatch(/\/account\/$/);
  });

  test('a change without its CSRF token, with a wrong one or from another origin is refused', async () => {
    const { browser } = await signedInUser('account-csrf');
    const csrf = csrfOf((await browser.get('/account/totp')).text);
    const attempts = [
      await browser.post('/account/totp/enroll', {}),
      await browser.post('/account/totp/enroll', { csrf: `${csrf.slice(0, -1)}x` }),
      await browser.post('/account/totp/enroll', { csrf }, { origin: 'https://attacker.example' }),
      await browser.post('/account/totp/enroll', { csrf }, { origin: null }),
      await browser.post('/account/logout', {}),
    ];
    for (const refused of attempts) {
      expect(refused.status).toBe(403);
      expect(refused.header('content-type')).toContain('text/html');
      expect(refused.text).toContain('the form did not come from this page');
    }
    // Nothing changed: still signed in, no enrollment started.
    expect((await browser.get('/account/totp')).text).toContain('Set up an authenticator app');
  });

  test('an identity whose policy comes to require an external JWT with every request is signed out', async () => {
    const { browser, id } = await signedInUser('account-ext-jwt');
    expect((await browser.get('/account/')).text).toContain('account-ext-jwt');
    const idp = await createIdp(api, 'account-idp');
    const policy = await createPolicy(api, 'account-ext-jwt-policy', {
      secondary: { requireExtJwtSigner: idp.id },
    });
    const patched = await api.patch(`/identities/${id}`, { body: { authPolicyId: policy } });
    expect(patched.status).toBe(200);
    const after = await browser.get('/account/');
    expect(after.text).toContain('<form method="post" action="/account/login">');
    expect(after.text).not.toContain('account-ext-jwt');
  });
});
