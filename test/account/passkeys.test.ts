import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createSoftAuthenticator } from '../helpers/soft-authenticator.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser, type TestUser } from '../mfa/mfa-fixtures.js';
import { browserLike, csrfOf, inputValue, signIn, type BrowserLike } from './account-fixtures.js';

describe('account page: passkeys (an extension beyond the specification)', () => {
  let server: TestServer;
  let origin: string;
  beforeAll(async () => {
    server = await startTestServer();
    // Passkeys need a DNS name: the default listener's localhost address.
    origin = server.app.listeners[0]!.urls.find((u) => u.includes('localhost'))!;
  });
  afterAll(() => server.close());

  async function signedIn(name: string): Promise<{ browser: BrowserLike; user: TestUser; page: string }> {
    const user = await createUser(server, name);
    const browser = browserLike({ baseUrl: origin, ca: server.ca });
    await signIn(browser, user.username, user.password);
    const page = (await browser.get('/account/passkeys')).text;
    return { browser, user, page };
  }

  const json = (browser: BrowserLike, path: string, body: unknown, headers: Record<string, string>) =>
    browser.client.post(path, {
      body,
      headers: { cookie: [...browser.jar].map(([k, v]) => `${k}=${v}`).join('; '), ...headers },
    });

  async function addPasskey(browser: BrowserLike, page: string, name: string) {
    const authenticator = createSoftAuthenticator({ origin, rpId: 'localhost' });
    const headers = { origin, 'x-csrf-token': csrfOf(page) };
    const options = await json(browser, '/account/passkeys/options', {}, headers);
    expect(options.status).toBe(200);
    const response = await authenticator.register(options.body.data.options);
    const registered = await json(browser, '/account/passkeys/register', { name, response }, headers);
    return { options, registered, authenticator };
  }

  test('add with the script’s endpoints, list, rename, remove', async () => {
    const { browser, page } = await signedIn('account-passkey-user');
    expect(page).toContain('You have no passkeys yet.');
    expect(page).toContain('<script src="/account/passkeys.js" defer></script>');
    const { registered } = await addPasskey(browser, page, 'My laptop');
    expect(registered.status).toBe(201);
    expect(registered.body.data.name).toBe('My laptop');

    const listed = await browser.get('/account/passkeys');
    expect(listed.text).toContain('<h2>My laptop</h2>');
    const id = inputValue(listed.text.split('<li><h2>')[1]!, 'id')!;

    const renamed = await browser.post('/account/passkeys/rename', {
      csrf: csrfOf(listed.text),
      id,
      [`name-${id}`]: 'Work laptop',
    });
    expect(renamed.url).toContain('done=passkey-renamed');
    expect(renamed.text).toContain('<h2>Work laptop</h2>');

    const tooLong = await browser.post('/account/passkeys/rename', {
      csrf: csrfOf(renamed.text),
      id,
      [`name-${id}`]: 'x'.repeat(300),
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.text).toMatch(new RegExp(`<input id="name-${id}"[^>]*aria-invalid="true"`));

    const removed = await browser.post('/account/passkeys/remove', { csrf: csrfOf(tooLong.text), id });
    expect(removed.url).toContain('done=passkey-removed');
    expect(removed.text).toContain('You have no passkeys yet.');
  });

  test('the script’s endpoints refuse a missing or wrong CSRF token and another origin', async () => {
    const { browser, page } = await signedIn('account-passkey-csrf');
    const csrf = csrfOf(page);
    const attempts: Record<string, string>[] = [
      { origin },
      { origin, 'x-csrf-token': `${csrf}x` },
      { origin: 'https://attacker.example', 'x-csrf-token': csrf },
      { 'x-csrf-token': csrf },
    ];
    for (const headers of attempts) {
      const res = await json(browser, '/account/passkeys/options', {}, headers);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('CSRF_REFUSED');
    }
  });

  test('a ceremony is bound to the page session that started it', async () => {
    const a = await signedIn('account-passkey-bound');
    const b = browserLike({ baseUrl: origin, ca: server.ca });
    await signIn(b, a.user.username, a.user.password);
    const bPage = (await b.get('/account/passkeys')).text;
    const authenticator = createSoftAuthenticator({ origin, rpId: 'localhost' });
    const options = await json(
      a.browser,
      '/account/passkeys/options',
      {},
      { origin, 'x-csrf-token': csrfOf(a.page) },
    );
    const response = await authenticator.register(options.body.data.options);
    // B presents A's ceremony: refused, and A can still finish it.
    const stolen = await json(
      b,
      '/account/passkeys/register',
      { name: 'x', response },
      { origin, 'x-csrf-token': csrfOf(bPage) },
    );
    expect(stolen.status).toBe(400);
    expect(stolen.body.error.code).toBe('PASSKEY_REGISTRATION_FAILED');
    const own = await json(
      a.browser,
      '/account/passkeys/register',
      { name: 'x', response },
      { origin, 'x-csrf-token': csrfOf(a.page) },
    );
    expect(own.status).toBe(201);
  });

  test('adding a passkey needs a sign-in within five minutes: otherwise the page offers a fresh one', async () => {
    const { browser, page, user } = await signedIn('account-passkey-stale');
    // The sign-in was six minutes ago (the row keeps the login's auth_time).
    const identity = await server.app.knex('identities').where({ name: 'account-passkey-stale' }).first();
    await server.app
      .knex('account_sessions')
      .where({ identity_id: identity.id })
      .update({ auth_time: new Date(Date.now() - 6 * 60_000) });
    const stale = await browser.get('/account/passkeys');
    expect(stale.text).toContain('Sign in again');
    expect(stale.text).not.toContain('<script');
    const refused = await json(
      browser,
      '/account/passkeys/options',
      {},
      { origin, 'x-csrf-token': csrfOf(page) },
    );
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('REAUTHENTICATION_REQUIRED');
    // A fresh sign-in from the page's button brings the add form back.
    const again = await signIn(browser, user.username, user.password, '/account/passkeys');
    expect(new URL(again.url).pathname).toBe('/account/passkeys');
    expect(again.text).toContain('<form id="add-passkey"');
  });

  test('renaming or removing a passkey also needs a sign-in within five minutes', async () => {
    const { browser, page } = await signedIn('account-passkey-stale-change');
    await addPasskey(browser, page, 'My phone');
    const listed = await browser.get('/account/passkeys');
    const id = inputValue(listed.text.split('<li><h2>')[1]!, 'id')!;
    const identity = await server.app
      .knex('identities')
      .where({ name: 'account-passkey-stale-change' })
      .first();
    await server.app
      .knex('account_sessions')
      .where({ identity_id: identity.id })
      .update({ auth_time: new Date(Date.now() - 6 * 60_000) });

    const renamed = await browser.post('/account/passkeys/rename', {
      csrf: csrfOf(listed.text),
      id,
      [`name-${id}`]: 'Stolen',
    });
    const removed = await browser.post('/account/passkeys/remove', { csrf: csrfOf(listed.text), id });
    const after = await browser.get('/account/passkeys');

    expect(renamed.status).toBe(403);
    expect(renamed.text).toContain('Sign in again');
    expect(removed.status).toBe(403);
    expect(after.text).toContain('<h2>My phone</h2>');
  });

  test('at an IP address the page explains why passkeys cannot be added', async () => {
    const user = await createUser(server, 'account-passkey-ip');
    const browser = browserLike({ baseUrl: server.url, ca: server.ca });
    await signIn(browser, user.username, user.password);
    const page = await browser.get('/account/passkeys');
    expect(page.text).toContain('Passkeys cannot be added at this address');
    expect(page.text).not.toContain('<script');
  });
});
