import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { generateClientKeyAndCsr } from '../../src/crypto/pki.js';
import { apiSessionsRepository } from '../../src/repositories/api-sessions-repository.js';
import {
  BROWSER_TIMEOUT,
  describedBy,
  launchChromium,
  expectAccessiblePage,
  layoutFacts,
  navigate,
  PHONE,
  screenshotDir,
  watchedPage,
  type WatchedPage,
} from '../helpers/browser.js';
import { BINARIES, describeNeeding } from '../helpers/system-binaries.js';
import { runExample, writeCaFile, type ExampleProcess } from '../helpers/example-process.js';
import { followToCallback } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { CLIENT, createIdentity, identityDetail, managementApi } from '../identities/identity-fixtures.js';
import { createUser, type TestUser } from '../mfa/mfa-fixtures.js';
import { createPolicy } from '../second-factors/factor-fixtures.js';

/** The example's session cookie and its sealed sign-in cookie (examples/web-app/server.js). */
const SESSION_COOKIE = 'webapp.sid';
const SIGN_IN_COOKIE = 'webapp.signin';

describeNeeding([BINARIES.chromium])(
  'examples/web-app in Chromium: password, TOTP enrollment, Edge API, end_session',
  () => {
    let server: TestServer;
    let app: ExampleProcess;
    let appUrl: string;
    let browser: Browser;
    let user: TestUser;
    let w: WatchedPage;
    const dir = screenshotDir('web-app');

    beforeAll(async () => {
      server = await startTestServer();
      const api = managementApi(server, await server.adminToken());
      const policy = await createPolicy(api, 'browser-totp-required', { secondary: { requireTotp: true } });
      user = await createUser(server, 'browser-user', policy);
      app = runExample('web-app/server.js', [], {
        SVC_ISSUER: `${server.url}/oidc`,
        PORT: '0',
        NODE_EXTRA_CA_CERTS: writeCaFile(server.dataDir, server.ca),
      });
      [appUrl, browser] = await Promise.all([app.line(/listening on (http\S+)/), launchChromium()]);
      // No JavaScript at all: the controller's pages and this app must work without it.
      w = await watchedPage(browser, dir, { ...PHONE, javaScriptEnabled: false });
    }, BROWSER_TIMEOUT);
    afterAll(async () => {
      await w?.context.close();
      await browser?.close();
      await app?.stop();
      await server?.close();
    });

    const asidExists = async (asid: string) =>
      (await apiSessionsRepository.findById(server.app.knex, asid)) !== undefined;
    const appSessionId = async (page: Page) =>
      (await page.context().cookies(appUrl)).find((c) => c.name === SESSION_COOKIE)?.value;

    test('a session id planted in the browser before sign-in is never the signed-in one (plain HTTP)', async () => {
      // The app, as the browser sees it: no redirects followed, cookies sent by hand.
      const fetchApp = (path: string, cookies: Record<string, string> = {}) =>
        fetch(new URL(path, appUrl), {
          redirect: 'manual',
          headers: {
            cookie: Object.entries(cookies)
              .map(([name, value]) => `${name}=${value}`)
              .join('; '),
          },
        });
      const cookieSet = (res: Response, name: string) => {
        const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
        expect(cookie).toMatch(/;\s*httponly(;|$)/i);
        expect(cookie).toMatch(/;\s*samesite=lax(;|$)/i);
        return cookie!.slice(name.length + 1).split(';')[0]!;
      };
      const signedInAs = async (sessionId: string) =>
        /Signed in as <strong[^>]*>([^<]*)/.exec(
          await (await fetchApp('/', { [SESSION_COOKIE]: sessionId })).text(),
        )?.[1];

      // The attacker plants a session id of their choosing in the victim's browser.
      const planted = 'planted-by-the-attacker';
      const victim = await createUser(server, 'fixation-victim');

      // The victim signs in with that cookie: /login keeps the sign-in in its own sealed cookie...
      const login = await fetchApp('/login', { [SESSION_COOKIE]: planted });
      expect(login.status).toBe(302);
      const signIn = cookieSet(login, SIGN_IN_COOKIE);
      const authorization = await server.client.get(login.headers.get('location')!);
      expect(authorization.status).toBe(303);
      const loginPage = new URL(authorization.header('location')!, server.url);
      const submitted = await server.client.post(loginPage.pathname, {
        body: {
          authRequestId: loginPage.searchParams.get('authRequestID'),
          username: victim.username,
          password: victim.password,
        },
      });
      const callback = await followToCallback(server.client, submitted, `${appUrl}/auth/callback`);
      // ...and the callback, which signs the victim in, with a new session id.
      const signedIn = await fetchApp(callback.location, {
        [SESSION_COOKIE]: planted,
        [SIGN_IN_COOKIE]: signIn,
      });
      expect(signedIn.status).toBe(302);
      const signedInId = cookieSet(signedIn, SESSION_COOKIE);
      expect(signedInId).not.toBe(planted);

      expect(await signedInAs(signedInId)).toBe(victim.name);
      // The id known before the sign-in ended is not signed in.
      expect(await signedInAs(planted)).toBeUndefined();
      // A link to /login from another site does not end the sign-in.
      const again = await fetchApp('/login', { [SESSION_COOKIE]: signedInId });
      expect(again.headers.get('location')).toBe('/');
      expect(await signedInAs(signedInId)).toBe(victim.name);
    });

    test(
      'sign in with a wrong password first, enroll TOTP from the page, see the Edge API answer, sign out',
      async () => {
        const { page, shot } = w;
        await page.goto(appUrl);
        await shot('web-app-start');

        await navigate(page, () => page.getByRole('link', { name: 'Sign in', exact: true }).click());
        expect(new URL(page.url()).pathname).toBe('/oidc/login/username');
        // Starting a sign-in makes no session: the sign-in is kept in a sealed cookie of the callback.
        const sessionIdAtLogin = await appSessionId(page);
        expect(sessionIdAtLogin).toBeUndefined();
        expect((await page.context().cookies(`${appUrl}/auth/callback`)).map((c) => c.name)).toContain(
          SIGN_IN_COOKIE,
        );
        expect(await page.title()).toBe('Sign in');
        // Focus starts in the username field; Tab goes to the password, Enter submits.
        expect((await expectAccessiblePage(page, 'Sign in')).focused).toBe('username');
        await shot('controller-login');

        await page.keyboard.type(user.username);
        await page.keyboard.press('Tab');
        await page.keyboard.type('not-the-password');
        await w.expecting({ status: 401 }, () => navigate(page, () => page.keyboard.press('Enter')));
        expect(await page.title()).toBe('Error: Sign in');
        expect(await page.getByRole('alert').textContent()).toBe('The credentials were not accepted.');
        expect(await page.getByLabel('Username').inputValue()).toBe(user.username);
        expect(await describedBy(page, '#password')).toEqual({
          invalid: 'true',
          description: 'The credentials were not accepted.',
        });
        // Only the password needs typing again, so it has the focus.
        expect((await expectAccessiblePage(page, 'Sign in')).focused).toBe('password');
        await shot('controller-login-error');

        await page.keyboard.type(user.password);
        await navigate(page, () => page.keyboard.press('Enter'));
        expect(await page.title()).toBe('Set up two-step verification');
        await expectAccessiblePage(page, 'Set up two-step verification');
        await shot('controller-totp-enroll-start');

        await page.keyboard.press('Tab');
        expect(await page.evaluate(() => document.activeElement?.textContent)).toBe(
          'Set up an authenticator app',
        );
        await navigate(page, () => page.keyboard.press('Enter'));
        await expectAccessiblePage(page, 'Set up two-step verification');
        const qr = page.getByRole('img', { name: 'QR code of the authenticator setup link' });
        expect(
          await qr.evaluate((img: HTMLImageElement) => img.naturalWidth > 0 && img.width <= innerWidth),
        ).toBe(true);
        expect(await page.locator('ul.codes li').count()).toBe(10);
        const secret = (await page.locator('code.secret').textContent())!;
        expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
        await shot('controller-totp-enroll-qr');

        // A wrong code: the page again, the message tied to the code field, which has the focus.
        await page.getByLabel('Code from the app').fill('000000');
        await w.expecting({ status: 400 }, () => navigate(page, () => page.keyboard.press('Enter')));
        expect(await page.title()).toBe('Error: Set up two-step verification');
        const wrong = await describedBy(page, '#code');
        expect(wrong.invalid).toBe('true');
        expect(wrong.description).toContain(await page.getByRole('alert').textContent());
        expect((await layoutFacts(page)).focused).toBe('code');
        await shot('controller-totp-enroll-error');

        const step = timeStepAt();
        await page.keyboard.type(await totpCode(secret, step));
        await navigate(page, () => page.keyboard.press('Enter'));
        await page.waitForURL(`${appUrl}/`);
        expect(await page.locator('#identity-name').textContent()).toBe(user.name);
        // Signing in gave the browser a new session id (the session-fixation test shows why).
        expect(await appSessionId(page)).toMatch(/^[\w-]{43}$/);
        expect(await appSessionId(page)).not.toBe(sessionIdAtLogin);
        expect((await page.locator('#claim-amr').textContent())!.split(' ')).toEqual(
          expect.arrayContaining(['pwd', 'otp', 'mfa']),
        );
        const edgeAnswer = JSON.parse((await page.locator('#api-result').textContent())!);
        expect(edgeAnswer.data).toMatchObject({ id: user.id, name: user.name });
        const asid = (await page.locator('#claim-asid').textContent())!;
        expect(await asidExists(asid)).toBe(true);
        await shot('web-app-signed-in');

        await navigate(page, () => page.getByRole('button', { name: 'Sign out' }).click());
        await page.waitForURL(`${appUrl}/auth/logout`);
        expect(await page.locator('h1').textContent()).toBe('Signed out');
        // end_session ended the API session of those tokens on the controller.
        expect(await asidExists(asid)).toBe(false);
        await shot('web-app-signed-out');

        // Signing in again asks for a code of the enrolled app.
        await page.goto(appUrl);
        await navigate(page, () => page.getByRole('link', { name: 'Sign in', exact: true }).click());
        await page.getByLabel('Username').fill(user.username);
        await page.getByLabel('Password').fill(user.password);
        await navigate(page, () => page.getByRole('button', { name: 'Sign in' }).click());
        expect(await page.title()).toBe('Two-step verification');
        expect((await expectAccessiblePage(page, 'Two-step verification')).focused).toBe('code');
        expect((await describedBy(page, '#code')).description).toContain('recovery codes');
        await shot('controller-totp');
        // Each code works once: the next time step's code (the controller accepts ±1 step).
        await page.keyboard.type(await totpCode(secret, Math.max(step + 1, timeStepAt())));
        await navigate(page, () => page.keyboard.press('Enter'));
        await page.waitForURL(`${appUrl}/`);
        expect(await page.locator('#identity-name').textContent()).toBe(user.name);

        w.assertClean();
      },
      BROWSER_TIMEOUT,
    );

    test(
      'the certificate page explains itself, and without a certificate says so on the page',
      async () => {
        const { page, shot } = w;
        // A new visitor of the app (a signed-in one is not sent to sign in again).
        await page.context().clearCookies({ name: SESSION_COOKIE });
        await page.goto(`${appUrl}/auth/logout`);
        await navigate(page, () => page.goto(`${appUrl}/login?method=cert`).then(() => undefined));
        expect(new URL(page.url()).pathname).toBe('/oidc/login/cert');
        await expectAccessiblePage(page, 'Sign in with a certificate');
        await shot('controller-login-cert');

        await page.keyboard.press('Tab');
        await w.expecting({ status: 401 }, () => navigate(page, () => page.keyboard.press('Enter')));
        expect(await page.title()).toBe('Error: Sign in with a certificate');
        expect(await page.getByRole('alert').textContent()).toBe('The credentials were not accepted.');
        await shot('controller-login-cert-error');

        w.assertClean();
      },
      BROWSER_TIMEOUT,
    );

    test(
      'with a client certificate from the controller PKI, the certificate page signs the user in',
      async () => {
        const api = managementApi(server, await server.adminToken());
        const name = 'browser-device';
        // The web app's server redeems the code over its own connection, which cannot present the
        // browser's certificate: a browser's certificate logins need a policy that binds nothing.
        const unbound = await createPolicy(api, 'browser-cert-unbound', {
          primary: { cert: { allowed: true, bindTokens: false } },
        });
        const id = await createIdentity(api, {
          name,
          isAdmin: false,
          authPolicyId: unbound,
          enrollment: { ott: true },
        });
        const { token } = (await identityDetail(api, id)).enrollment.ott;
        const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: name });
        const enrolled = await server.client.post(`${CLIENT}/enroll/ott`, {
          body: { token, clientCsr: csrPem },
        });
        expect(enrolled.status).toBe(200);
        // The browser presents this certificate in the TLS handshake with the controller.
        const certified = await watchedPage(browser, dir, {
          ...PHONE,
          javaScriptEnabled: false,
          clientCertificates: [
            { origin: server.url, cert: Buffer.from(enrolled.body.data.cert), key: Buffer.from(keyPem) },
          ],
        });
        try {
          const { page, shot } = certified;
          await page.goto(`${appUrl}/login?method=cert`);
          expect(new URL(page.url()).pathname).toBe('/oidc/login/cert');
          await expectAccessiblePage(page, 'Sign in with a certificate');
          await navigate(page, () =>
            page.getByRole('button', { name: 'Continue with my certificate' }).click(),
          );
          await page.waitForURL(`${appUrl}/`);
          expect(await page.locator('#identity-name').textContent()).toBe(name);
          expect(await page.locator('#claim-amr').textContent()).toBe('cert');
          expect(JSON.parse((await page.locator('#api-result').textContent())!).data.id).toBe(id);
          await shot('web-app-signed-in-with-certificate');
          certified.assertClean();
        } finally {
          await certified.context.close();
        }
      },
      BROWSER_TIMEOUT,
    );
  },
);
