import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Browser } from 'playwright-core';
import {
  BROWSER_TIMEOUT,
  launchChromium,
  expectAccessiblePage,
  navigate,
  PHONE,
  screenshotDir,
  watchedPage,
  type WatchedPage,
} from '../helpers/browser.js';
import { runExample, writeCaFile, type ExampleProcess } from '../helpers/example-process.js';
import { BINARIES, describeNeeding } from '../helpers/system-binaries.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { managementApi } from '../identities/identity-fixtures.js';
import { createPolicy, createUser, enrollTotp, type TestUser } from '../second-factors/factor-fixtures.js';

describeNeeding([BINARIES.chromium])(
  'device authorization grant in Chromium: a headless device polls while a person confirms and signs in with TOTP',
  () => {
    let server: TestServer;
    let device: ExampleProcess;
    let browser: Browser;
    let user: TestUser;
    let secret: string;
    let enrolledStep: number;
    let w: WatchedPage;
    const dir = screenshotDir('device-flow');

    beforeAll(async () => {
      server = await startTestServer();
      const api = managementApi(server, await server.adminToken());
      const policy = await createPolicy(api, 'device-totp-required', { secondary: { requireTotp: true } });
      user = await createUser(server, 'device-person', policy);
      const enrolled = await enrollTotp(server, user);
      secret = enrolled.url;
      enrolledStep = enrolled.step;
      browser = await launchChromium();
      // The pages carry no script (layoutFacts counts them; the CSP allows none). JavaScript stays
      // on for the test's own page.evaluate: Chromium runs no animation frame without it.
      w = await watchedPage(browser, dir, PHONE);
    }, BROWSER_TIMEOUT);
    afterAll(async () => {
      await w?.context.close();
      await browser?.close();
      await device?.stop();
      await server?.close();
    });

    test(
      'the person opens the link, confirms the code, signs in with password and TOTP; the device gets tokens and calls the Edge API',
      async () => {
        device = runExample('../test/device-flow/fixtures/headless-device.mjs', [`${server.url}/oidc`], {
          NODE_EXTRA_CA_CERTS: writeCaFile(server.dataDir, server.ca),
        });
        const link = await device.line(/^VERIFY (\S+)$/);
        const userCode = await device.line(/^CODE (\S+)$/);
        const { page, shot } = w;

        // The link opens the code form, prefilled; continuing looks the code up, and one page
        // names the code and the device's address and offers confirm and decline.
        await page.goto(link);
        await expectAccessiblePage(page, 'Sign in on a device');
        expect(await page.getByLabel('Code').inputValue()).toBe(userCode);
        await navigate(page, () => page.getByRole('button', { name: 'Continue' }).click());
        const question = `Sign in on the device showing ${userCode}?`;
        expect(await page.title()).toBe(question);
        await expectAccessiblePage(page, question);
        expect(await page.getByRole('button', { name: 'Decline' }).isVisible()).toBe(true);
        expect(await page.getByText('The request came from the address').isVisible()).toBe(true);
        await shot('device-confirm');

        await navigate(page, () => page.getByRole('button', { name: 'Confirm and sign in' }).click());
        expect(new URL(page.url()).pathname).toBe('/oidc/login/username');
        expect(await page.getByText(`Signing in the device showing ${userCode}`).isVisible()).toBe(true);
        await page.getByLabel('Username').fill(user.username);
        await page.getByLabel('Password').fill(user.password);
        await navigate(page, () => page.getByRole('button', { name: 'Sign in' }).click());
        expect((await expectAccessiblePage(page, 'Two-step verification')).focused).toBe('code');
        await page.keyboard.type(await totpCode(secret, Math.max(enrolledStep + 1, timeStepAt())));
        await navigate(page, () => page.keyboard.press('Enter'));
        await expectAccessiblePage(page, 'Device signed in');
        await shot('device-signed-in');

        // The device was polling all along; it finishes on its own.
        expect(await device.exited).toBe(0);
        const printed = (prefix: string) =>
          device
            .stdout()
            .split('\n')
            .find((l) => l.startsWith(prefix))!
            .slice(prefix.length);
        const claims = JSON.parse(printed('TOKENS '));
        expect(claims.sub).toBe(user.id);
        expect(claims.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
        const edge = printed('EDGE ');
        expect(edge.startsWith('200 ')).toBe(true);
        expect(JSON.parse(edge.slice(4)).data).toMatchObject({ id: user.id, name: user.name });
        w.assertClean();
      },
      BROWSER_TIMEOUT,
    );
  },
);
