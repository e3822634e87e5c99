import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Browser, CDPSession } from 'playwright-core';
import {
  BROWSER_TIMEOUT,
  launchChromium,
  layoutFacts,
  navigate,
  PHONE,
  screenshotDir,
  watchedPage,
  type WatchedPage,
} from '../helpers/browser.js';
import { runExample, writeCaFile, type ExampleProcess } from '../helpers/example-process.js';
import { BINARIES, describeNeeding } from '../helpers/system-binaries.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser, type TestUser } from '../mfa/mfa-fixtures.js';

describeNeeding([BINARIES.chromium])(
  'passkeys on the account page, in Chromium with a virtual authenticator',
  () => {
    let server: TestServer;
    let browser: Browser;
    let user: TestUser;
    let w: WatchedPage;
    let origin: string;
    /** The page's DevTools session and its virtual authenticator, kept for the next sign-ins. */
    let cdp: CDPSession;
    let authenticatorId: string;
    let app: ExampleProcess | undefined;
    const dir = screenshotDir('account-passkeys');

    beforeAll(async () => {
      server = await startTestServer();
      // WebAuthn needs a DNS name: the default listener's `localhost` address (the rpId).
      origin = server.app.listeners[0]!.urls.find((u) => u.includes('localhost'))!;
      user = await createUser(server, 'passkey-browser-user');
      browser = await launchChromium();
      w = await watchedPage(browser, dir, PHONE);
    }, BROWSER_TIMEOUT);
    afterAll(async () => {
      await w?.context.close();
      await browser?.close();
      await app?.stop();
      await server?.close();
    });

    test(
      'a person signs in with a password, adds a passkey on the account page, and sees it listed',
      async () => {
        const { page } = w;
        cdp = await page.context().newCDPSession(page);
        await cdp.send('WebAuthn.enable');
        ({ authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
          options: {
            protocol: 'ctap2',
            transport: 'internal',
            hasResidentKey: true,
            hasUserVerification: true,
            isUserVerified: true,
            automaticPresenceSimulation: true,
          },
        }));

        await page.goto(`${origin}/account/`);
        await navigate(page, () => page.click('button:has-text("Sign in")'));
        await page.fill('#username', user.username);
        await page.fill('#password', user.password);
        await navigate(page, () => page.click('button[type=submit]'));
        await navigate(page, () => page.click('nav a:has-text("Passkeys")'));
        const facts = await layoutFacts(page);
        expect(facts).toMatchObject({
          viewport: 'width=device-width, initial-scale=1',
          lang: 'en',
          overflowsX: false,
          h1: 'Passkeys',
          main: 1,
          unlabelled: [],
          // The one script of the account page, and only on this page.
          scripts: 1,
        });
        await w.shot('account-passkeys-empty');

        await page.fill('#passkey-name', 'This phone');
        await navigate(page, () => page.click('button:has-text("Add a passkey")'));
        expect(new URL(page.url()).search).toBe('?done=passkey-added');
        expect(await page.textContent('.notice')).toBe('The passkey was added.');
        expect(await page.locator('ul.items h2').allTextContents()).toEqual(['This phone']);
        await w.shot('account-passkeys-added');

        const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
        expect(credentials).toHaveLength(1);
        expect(credentials[0]!.isResidentCredential).toBe(true);
        expect(credentials[0]!.rpId).toBe('localhost');
        w.assertClean();
      },
      BROWSER_TIMEOUT,
    );

    /** Signs in on the controller's login page with the passkey button alone (no username). */
    async function signInWithPasskeyAlone(wantedUrl: (url: URL) => boolean) {
      const { page } = w;
      expect(new URL(page.url()).pathname).toBe('/oidc/login/username');
      // The script shows the offer only where the browser can use a passkey.
      const offer = page.locator('form[data-passkey="get"] button');
      await offer.waitFor({ state: 'visible' });
      expect(await offer.textContent()).toBe('Sign in with a passkey');
      await offer.click();
      await page.waitForURL(wantedUrl, { waitUntil: 'load' });
    }

    test(
      'the same person signs out and signs in again on the account page with the passkey alone',
      async () => {
        const { page } = w;
        const signInsBefore = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials[0]!
          .signCount;
        await page.goto(`${origin}/account/`);
        await navigate(page, () => page.click('form.signout button'));
        expect(await page.textContent('.notice')).toBe('You are signed out.');

        await navigate(page, () => page.click('button:has-text("Sign in")'));
        expect(new URL(page.url()).pathname).toBe('/oidc/login/username');
        // The offer is the login page's only script, below the password form.
        const offer = page.locator('form[data-passkey="get"] button');
        await offer.waitFor({ state: 'visible' });
        expect(await layoutFacts(page)).toMatchObject({
          lang: 'en',
          overflowsX: false,
          h1: 'Sign in',
          main: 1,
          unlabelled: [],
          scripts: 1,
        });
        await w.shot('login-passwordless-offer');

        // No username and no password: the resident credential names the person.
        await signInWithPasskeyAlone((url) => url.pathname === '/account/');
        expect(await page.textContent('dl.facts')).toContain(user.username);
        await navigate(page, () => page.click('nav a:has-text("Passkeys")'));
        expect(await page.locator('ul.items h2').allTextContents()).toEqual(['This phone']);
        await w.shot('account-passkeys-after-passwordless');

        // The authenticator signed an assertion: its counter moved on.
        const after = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;
        expect(after).toHaveLength(1);
        expect(after[0]!.signCount).toBeGreaterThan(signInsBefore);
        w.assertClean();
      },
      BROWSER_TIMEOUT,
    );

    test(
      'examples/web-app signed in with the passkey alone gets tokens whose amr says pop and mfa',
      async () => {
        const { page } = w;
        // The app's issuer is the controller at `localhost`, where the passkey's rpId holds.
        app = runExample('web-app/server.js', [], {
          SVC_ISSUER: `${origin}/oidc`,
          PORT: '0',
          NODE_EXTRA_CA_CERTS: writeCaFile(server.dataDir, server.ca),
        });
        const appUrl = await app.line(/listening on (http\S+)/);
        // Signed out of the account page first, so the controller asks again.
        await page.goto(`${origin}/account/`);
        await navigate(page, () => page.click('form.signout button'));

        await page.goto(appUrl);
        await navigate(page, () => page.getByRole('link', { name: 'Sign in', exact: true }).click());
        await signInWithPasskeyAlone((url) => url.href === `${appUrl}/`);
        expect(await page.locator('#identity-name').textContent()).toBe(user.name);
        expect((await page.locator('#claim-amr').textContent())!.split(' ')).toEqual(
          expect.arrayContaining(['pop', 'mfa']),
        );
        expect((await page.locator('#claim-amr').textContent())!.split(' ')).not.toContain('pwd');
        // The tokens work at the Edge API as this person.
        expect(JSON.parse((await page.locator('#api-result').textContent())!).data.id).toBe(user.id);
        await w.shot('web-app-signed-in-with-passkey');
        w.assertClean();
      },
      BROWSER_TIMEOUT,
    );
  },
);
