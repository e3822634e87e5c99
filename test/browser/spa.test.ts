import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createServer } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { apiSessionsRepository } from '../../src/repositories/api-sessions-repository.js';
import {
  BROWSER_TIMEOUT,
  launchChromium,
  PHONE,
  screenshotDir,
  watchedPage,
  type WatchedPage,
} from '../helpers/browser.js';
import { BINARIES, describeNeeding } from '../helpers/system-binaries.js';
import { runExample, writeCaFile, type ExampleProcess } from '../helpers/example-process.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser, type TestUser } from '../mfa/mfa-fixtures.js';

/** A port that was free a moment ago: the controller must know the app's origin before it starts. */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

const statusIs = (page: Page, text: string) =>
  page.waitForFunction((t) => document.getElementById('status')?.textContent === t, text, {
    timeout: 60_000,
  });

/** What oidc-client-ts keeps for the signed-in user in sessionStorage. */
const storedUser = (page: Page) =>
  page.evaluate(() => {
    const key = Object.keys(sessionStorage).find((k) => k.startsWith('oidc.user:'));
    return key ? JSON.parse(sessionStorage.getItem(key)!) : null;
  });

describeNeeding([BINARIES.chromium])(
  'examples/spa in Chromium: oidc-client-ts, code flow with PKCE, CORS for its origin only',
  () => {
    let server: TestServer;
    let spa: ExampleProcess;
    let other: ExampleProcess;
    let spaUrl: string;
    let otherUrl: string;
    let browser: Browser;
    let user: TestUser;
    let w: WatchedPage;
    const dir = screenshotDir('spa');

    beforeAll(async () => {
      const port = await freePort();
      spaUrl = `http://localhost:${port}`;
      // Only the app's own callback: the origins of the redirect URIs are the ones CORS allows.
      server = await startTestServer({
        env: {
          SVC_OIDC_REDIRECT_URIS: `${spaUrl}/auth/callback`,
          SVC_OIDC_POST_LOGOUT_URIS: `${spaUrl}/auth/logout`,
        },
      });
      user = await createUser(server, 'spa-user');
      const env = {
        SVC_ISSUER: `${server.url}/oidc`,
        NODE_EXTRA_CA_CERTS: writeCaFile(server.dataDir, server.ca),
      };
      spa = runExample('spa/server.js', [], { ...env, PORT: String(port) });
      // The same app from another port: another origin, which the controller does not allow.
      other = runExample('spa/server.js', [], { ...env, PORT: '0' });
      let listening: string;
      [listening, otherUrl, browser] = await Promise.all([
        spa.line(/listening on (http\S+)/),
        other.line(/listening on (http\S+)/),
        launchChromium(),
      ]);
      expect(listening).toBe(spaUrl);
      w = await watchedPage(browser, dir, PHONE);
    }, BROWSER_TIMEOUT);
    afterAll(async () => {
      await w?.context.close();
      await browser?.close();
      await Promise.all([spa?.stop(), other?.stop()]);
      await server?.close();
    });

    test(
      'sign in, userinfo and the Edge API from the page, refresh, sign out through end_session',
      async () => {
        const { page, shot } = w;
        await page.goto(spaUrl);
        await statusIs(page, 'Not signed in.');
        await shot('spa-start');

        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL((url) => url.pathname === '/oidc/login/username');
        await page.getByLabel('Username').fill(user.username);
        await page.getByLabel('Password').fill(user.password);
        await page.getByRole('button', { name: 'Sign in' }).click();
        // The callback page exchanges the code at the token endpoint, reads userinfo and calls the Edge
        // API: three cross-origin calls from the app's origin.
        await statusIs(page, 'Signed in.');
        expect(new URL(page.url()).pathname).toBe('/');
        expect(await page.locator('#identity-name').textContent()).toBe(user.name);
        expect(await page.locator('#api-result').textContent()).toMatch(/^HTTP 200\n/);
        expect(
          JSON.parse((await page.locator('#api-result').textContent())!.split('\n').slice(1).join('\n')).data,
        ).toMatchObject({
          id: user.id,
          name: user.name,
        });
        const first = await storedUser(page);
        expect(first.profile.name).toBe(user.name);
        expect(first.refresh_token).toEqual(expect.any(String));
        await shot('spa-signed-in');

        await page.getByRole('button', { name: 'Refresh the tokens' }).click();
        await statusIs(page, 'Tokens refreshed.');
        const refreshed = await storedUser(page);
        expect(refreshed.access_token).not.toBe(first.access_token);
        expect(refreshed.refresh_token).not.toBe(first.refresh_token);
        expect(await page.locator('#api-result').textContent()).toMatch(/^HTTP 200\n/);

        // The token endpoint's refusal of a made-up refresh token is readable from this origin.
        await w.expecting({ status: 400 }, async () => {
          await page.getByRole('button', { name: 'Check' }).click();
          await page
            .getByText(/^Allowed: the token endpoint answered HTTP 400 \(invalid_grant\)\.$/)
            .waitFor();
        });
        await shot('spa-cors-allowed');

        const asid = first.profile.z_asid as string;
        expect(await apiSessionsRepository.findById(server.app.knex, asid)).toBeDefined();
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.waitForURL(`${spaUrl}/`);
        await statusIs(page, 'Signed out.');
        expect(await storedUser(page)).toBeNull();
        expect(await apiSessionsRepository.findById(server.app.knex, asid)).toBeUndefined();
        await shot('spa-signed-out');

        w.assertClean();
      },
      BROWSER_TIMEOUT,
    );

    test(
      'from another origin the browser withholds the token endpoint and userinfo answers',
      async () => {
        const { page, shot } = w;
        await page.goto(otherUrl);
        await statusIs(page, 'Not signed in.');
        await w.expecting({ console: /blocked by CORS policy|net::ERR_FAILED/ }, async () => {
          await page.getByRole('button', { name: 'Check' }).click();
          await page
            .getByText('Refused: the browser blocked the answer of the token endpoint (CORS).')
            .waitFor();
          const userinfo = await page.evaluate(async (url) => {
            try {
              await fetch(url, { headers: { authorization: 'Bearer x' } });
              return 'answered';
            } catch (err) {
              return (err as Error).name;
            }
          }, `${server.url}/oidc/userinfo`);
          expect(userinfo).toBe('TypeError');
        });
        await shot('spa-other-origin-refused');

        // What the browser enforced is the controller's answer: no allow-origin for the other origin.
        const asked = (origin: string) =>
          server.client.post('/oidc/token', {
            headers: { origin },
            form: { grant_type: 'refresh_token', refresh_token: 'not-a-token', client_id: 'svc' },
          });
        const [allowed, refused] = await Promise.all([asked(spaUrl), asked(otherUrl)]);
        expect(allowed.header('access-control-allow-origin')).toBe(spaUrl);
        expect(refused.header('access-control-allow-origin')).toBeUndefined();

        w.assertClean();
      },
      BROWSER_TIMEOUT,
    );
  },
);
