import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Browser } from 'playwright-core';
import {
  BROWSER_TIMEOUT,
  describedBy,
  expectAccessiblePage,
  launchChromium,
  navigate,
  PHONE,
  screenshotDir,
  watchedPage,
  type WatchedPage,
} from '../helpers/browser.js';
import { BINARIES, describeNeeding } from '../helpers/system-binaries.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { createUser, type TestUser } from '../mfa/mfa-fixtures.js';

describeNeeding([BINARIES.chromium])('the account page in Chromium, on a phone, without JavaScript', () => {
  let server: TestServer;
  let browser: Browser;
  let user: TestUser;
  let w: WatchedPage;
  const dir = screenshotDir('account-page');

  beforeAll(async () => {
    server = await startTestServer();
    user = await createUser(server, 'account-browser-user');
    browser = await launchChromium();
    // No JavaScript: every page but the passkey ceremony works without it.
    w = await watchedPage(browser, dir, { ...PHONE, javaScriptEnabled: false });
  }, BROWSER_TIMEOUT);
  afterAll(async () => {
    await w?.context.close();
    await browser?.close();
    await server?.close();
  });

  test(
    'sign in on the login page, set up an authenticator app, see the sessions, sign out',
    async () => {
      const { page } = w;
      await page.goto(`${server.url}/account/`);
      await expectAccessiblePage(page, 'Your account');
      await w.shot('account-signed-out');

      await navigate(page, () => page.click('button:has-text("Sign in")'));
      expect(new URL(page.url()).pathname).toBe('/oidc/login/username');
      await page.fill('#username', user.username);
      await page.fill('#password', user.password);
      await navigate(page, () => page.click('button[type=submit]'));
      expect(new URL(page.url()).pathname).toBe('/account/');
      await expectAccessiblePage(page, 'Your account');
      expect(await page.textContent('dl.facts')).toContain(user.username);
      await w.shot('account-overview');

      await navigate(page, () => page.click('nav a:has-text("Authenticator app")'));
      await expectAccessiblePage(page, 'Authenticator app');
      await w.shot('account-totp');
      await navigate(page, () => page.click('button:has-text("Set up an authenticator app")'));
      await expectAccessiblePage(page, 'Authenticator app');
      expect(await page.locator('img.qr').count()).toBe(1);
      expect(await page.locator('ul.codes li').count()).toBeGreaterThan(0);
      await w.shot('account-totp-enroll');
      const secret = (await page.textContent('#totp-secret'))!;

      await page.fill('#code', '000000');
      await w.expecting({ status: 400 }, () =>
        navigate(page, () => page.click('button:has-text("Verify and turn on")')),
      );
      await expectAccessiblePage(page, 'Authenticator app');
      expect(await page.title()).toMatch(/^Error: /);
      expect(await describedBy(page, '#code')).toEqual({
        invalid: 'true',
        description: 'That code is not right. Enter the code your app shows now.',
      });
      await w.shot('account-totp-wrong-code');

      await page.fill('#code', await totpCode(secret, timeStepAt()));
      await navigate(page, () => page.click('button:has-text("Verify and turn on")'));
      await expectAccessiblePage(page, 'Authenticator app');
      expect(await page.textContent('.notice')).toContain('Your authenticator app is on');
      await w.shot('account-totp-on');

      await navigate(page, () => page.click('nav a:has-text("Sessions")'));
      await expectAccessiblePage(page, 'Sessions');
      expect(await page.locator('ul.items > li').count()).toBe(1);
      await w.shot('account-sessions');

      await navigate(page, () => page.click('form.signout button'));
      await expectAccessiblePage(page, 'Your account');
      expect(await page.textContent('.notice')).toBe('You are signed out.');
      w.assertClean();
    },
    BROWSER_TIMEOUT,
  );
});
