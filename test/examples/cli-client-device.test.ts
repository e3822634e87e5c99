// examples/cli-client --device: the example runs as its own process with openid-client's device
// authorization grant; the person's phone is a cookie-jar HTTPS client on the controller's pages.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { cookieJar, headingOf, inputValue, personSignsIn } from '../device-flow/device-fixtures.js';
import { runExample, writeCaFile } from '../helpers/example-process.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser } from '../mfa/mfa-fixtures.js';

describe('examples/cli-client --device', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const runDevice = () =>
    runExample('cli-client/cli.js', [`${server.url}/oidc`, '--device', '--json', '--timeout', '120'], {
      NODE_EXTRA_CA_CERTS: writeCaFile(server.dataDir, server.ca),
    });

  test('the person signs in on another device with the printed link; the example gets tokens, calls the Edge API and refreshes', async () => {
    const user = await createUser(server, 'cli-device-user');
    const cli = runDevice();
    try {
      const link = await cli.line(/^(https:\S+\/oidc\/device\?user_code=\S+)$/);
      expect(cli.output()).toMatch(/enter the code [B-Z]{4}-[B-Z]{4},/);

      // The phone is another host than the device.
      const phone = server.newClient({ localAddress: '127.0.0.2' });
      const done = await personSignsIn(cookieJar(phone), link, user);
      expect(headingOf(done.text)).toBe('Device signed in');

      expect(await cli.exited).toBe(0);
      const summary = JSON.parse(cli.stdout().trim().split('\n').at(-1)!);
      expect(summary).toMatchObject({
        identity: { id: user.id, name: user.name },
        subject: user.id,
        apiSession: expect.any(String),
        refreshed: { newAccessToken: true, newRefreshToken: true, identityName: user.name },
      });
      // The API session is the device's, at the device's address, not the phone's.
      const sessions = await server.client.get(`/edge/management/v1/api-sessions/${summary.apiSession}`, {
        headers: { 'svc-session': await server.adminToken() },
      });
      expect(sessions.body.data).toMatchObject({ kind: 'oidc', ipAddress: '127.0.0.1' });
    } finally {
      await cli.stop();
    }
  }, 120_000);

  test('the person declines: the example says so and exits 1', async () => {
    const cli = runDevice();
    try {
      const link = await cli.line(/^(https:\S+\/oidc\/device\?user_code=\S+)$/);
      const browser = cookieJar(server.client);
      const form = await browser.get(link);
      const confirm = await browser.post('/oidc/device', {
        form: { xsrf: inputValue(form.text, 'xsrf')!, user_code: inputValue(form.text, 'user_code')! },
      });
      await browser.post('/oidc/device', {
        form: {
          xsrf: inputValue(confirm.text, 'xsrf')!,
          user_code: inputValue(confirm.text, 'user_code')!,
          abort: 'yes',
        },
      });

      expect(await cli.exited).toBe(1);
      expect(cli.output()).toContain('cli.js: the sign-in was declined\n');
    } finally {
      await cli.stop();
    }
  }, 120_000);
});
