import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Browser } from 'playwright-core';
import {
  BROWSER_TIMEOUT,
  launchChromium,
  PHONE,
  screenshotDir,
  watchedPage,
  type WatchedPage,
} from '../helpers/browser.js';
import { BINARIES, describeNeeding } from '../helpers/system-binaries.js';
import { runExample, writeCaFile } from '../helpers/example-process.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser, type TestUser } from '../mfa/mfa-fixtures.js';

describeNeeding([BINARIES.chromium])(
  'examples/cli-client: loopback redirect with PKCE, refresh, Edge API calls',
  () => {
    let server: TestServer;
    let browser: Browser;
    let user: TestUser;
    let w: WatchedPage;
    const dir = screenshotDir('cli-client');

    beforeAll(async () => {
      // One after the other: on a busy machine the embedded database boots slowly enough already.
      server = await startTestServer();
      browser = await launchChromium();
      user = await createUser(server, 'cli-user');
      w = await watchedPage(browser, dir, PHONE);
    }, BROWSER_TIMEOUT);
    afterAll(async () => {
      await w?.context.close();
      await browser?.close();
      await server?.close();
    });

    test(
      'the CLI prints the authorization URL, the browser signs in, the CLI gets, uses and refreshes tokens',
      async () => {
        const cli = runExample('cli-client/cli.js', [`${server.url}/oidc`, '--json', '--timeout', '120'], {
          NODE_EXTRA_CA_CERTS: writeCaFile(server.dataDir, server.ca),
        });
        try {
          const url = new URL(await cli.line(/^(https:\S+\/oidc\/authorization\?\S+)$/));
          const redirectUri = new URL(url.searchParams.get('redirect_uri')!);
          // A loopback redirect on a port the CLI chose, with PKCE (RFC 8252 §7.3, §8.1).
          expect(redirectUri.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
          expect(redirectUri.pathname).toBe('/auth/callback');
          expect(url.searchParams.get('code_challenge_method')).toBe('S256');

          const { page, shot } = w;
          await page.goto(url.href);
          await page.waitForURL((u) => u.pathname === '/oidc/login/username');
          await page.getByLabel('Username').fill(user.username);
          await page.getByLabel('Password').fill(user.password);
          await page.getByRole('button', { name: 'Sign in' }).click();
          await page.waitForURL((u) => u.origin === redirectUri.origin && u.pathname === '/auth/callback');
          expect(await page.locator('h1').textContent()).toBe('Signed in');
          await shot('cli-loopback-signed-in');

          expect(await cli.exited).toBe(0);
          const result = JSON.parse(cli.stdout().trim().split('\n').at(-1)!);
          expect(result).toEqual({
            identity: { id: user.id, name: user.name },
            subject: user.id,
            apiSession: expect.any(String),
            refreshed: { newAccessToken: true, newRefreshToken: true, identityName: user.name },
          });
          w.assertClean();
        } finally {
          await cli.stop();
        }
      },
      BROWSER_TIMEOUT,
    );
  },
);
