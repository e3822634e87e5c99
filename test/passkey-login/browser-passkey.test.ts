import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Browser } from 'playwright-core';
import {
  BROWSER_TIMEOUT,
  launchChromium,
  navigate,
  screenshotDir,
  watchedPage,
  type WatchedPage,
} from '../helpers/browser.js';
import { authorizationPath, exchangeCode, newPkce } from '../helpers/oidc-client.js';
import { BINARIES, describeNeeding } from '../helpers/system-binaries.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { managementApi } from '../identities/identity-fixtures.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import { createPolicy, createUser, type TestUser } from '../second-factors/factor-fixtures.js';
import { localClient, localUrl } from './passkey-login-fixtures.js';

describeNeeding([BINARIES.chromium])(
  'passkeys in Chromium: the login pages’ script with a virtual authenticator',
  () => {
    let server: TestServer;
    let browser: Browser;
    let user: TestUser;
    let w: WatchedPage;
    /** The client's redirect URI: a page that says nothing, so the browser sees no error there. */
    let callbackServer: Server;
    let redirectUri: string;
    const dir = screenshotDir('passkey-login');

    beforeAll(async () => {
      server = await startTestServer();
      const api = managementApi(server, await server.adminToken());
      const policy = await createPolicy(api, 'browser-passkey-required', {
        secondary: { requirePasskey: true },
      });
      user = await createUser(server, 'browser-passkey', policy);
      callbackServer = createServer((_req, res) => res.end('<!DOCTYPE html><title>client</title>'));
      await new Promise<void>((done) => callbackServer.listen(0, '127.0.0.1', done));
      redirectUri = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/auth/callback`;
      browser = await launchChromium();
      w = await watchedPage(browser, dir);
      // A platform authenticator that verifies the user without asking, as a test needs it.
      const cdp = await w.context.newCDPSession(w.page);
      await cdp.send('WebAuthn.enable');
      await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: {
          protocol: 'ctap2',
          transport: 'internal',
          hasResidentKey: true,
          hasUserVerification: true,
          isUserVerified: true,
          automaticPresenceSimulation: true,
        },
      });
    }, BROWSER_TIMEOUT);
    afterAll(async () => {
      await w?.context.close();
      await browser?.close();
      await server?.close();
      await new Promise((done) => callbackServer?.close(done));
    });

    /** Opens the authorization URL at `localhost`; returns the PKCE verifier for the code exchange. */
    async function authorize(method: string): Promise<string> {
      const pkce = newPkce();
      await w.page.goto(
        `${localUrl(server)}${authorizationPath({ method, redirectUri }, pkce, 'st', 'nonce')}`,
      );
      return pkce.verifier;
    }

    /** Runs `action` and returns where it led the browser: the client's redirect URI, with the code. */
    async function toClient(action: () => Promise<void>): Promise<URL> {
      await navigate(w.page, action);
      const url = new URL(w.page.url());
      expect(url.href.startsWith(redirectUri)).toBe(true);
      return url;
    }

    async function amrOfCode(callback: URL, verifier: string): Promise<string[]> {
      const code = callback.searchParams.get('code')!;
      const token = await exchangeCode(localClient(server), { code, verifier, redirectUri });
      return [...payloadOf(token.body.id_token).amr].sort();
    }

    test(
      'a password sign-in registers the passkey its policy requires; the passkey then signs in alone',
      async () => {
        const { page, shot } = w;
        const first = await authorize('password');
        await page.fill('#username', user.username);
        await page.fill('#password', user.password);
        await navigate(page, () => page.click('form:not([data-passkey]) button[type=submit]'));
        expect(await page.textContent('h1')).toBe('Set up a passkey');
        await shot('passkey-registration');
        const registered = await toClient(() => page.click('form[data-passkey="create"] button'));

        expect(await amrOfCode(registered, first)).toEqual(['mfa', 'pop', 'pwd']);
        expect(await server.app.services.passkeys.count(user.id)).toBe(1);

        const second = await authorize('passkey');
        expect(await page.textContent('h1')).toBe('Sign in');
        await shot('sign-in-with-passkey-offered');
        const signedIn = await toClient(() => page.click('form[data-passkey="get"] button'));

        expect(await amrOfCode(signedIn, second)).toEqual(['mfa', 'pop']);
        // No CSP violation, script error or failed navigation on the way.
        w.assertClean();
      },
      BROWSER_TIMEOUT,
    );
  },
);
