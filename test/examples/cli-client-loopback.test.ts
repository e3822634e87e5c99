// examples/cli-client without a browser (the Chromium flow is test/browser/cli-client.test.ts): the
// login API is driven as the browser would, and other local processes knock on the loopback port.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { runExample, writeCaFile } from '../helpers/example-process.js';
import { followToCallback } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser } from '../mfa/mfa-fixtures.js';

describe('examples/cli-client loopback redirect', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test('a callback without the sign-in state is answered 400 and ignored; the real one still signs in', async () => {
    const user = await createUser(server, 'cli-loopback-user');
    const cli = runExample('cli-client/cli.js', [`${server.url}/oidc`, '--json', '--timeout', '60'], {
      NODE_EXTRA_CA_CERTS: writeCaFile(server.dataDir, server.ca),
    });
    try {
      const url = new URL(await cli.line(/^(https:\S+\/oidc\/authorization\?\S+)$/));
      const redirectUri = url.searchParams.get('redirect_uri')!;
      const state = url.searchParams.get('state')!;

      // Another local process answers first: a forged code, a wrong state, an error, no state.
      for (const query of [
        `code=forged&state=${state}x`,
        'error=access_denied&state=wrong',
        'code=forged',
        `code=forged&state=${state.slice(0, -1)}`,
      ]) {
        const knock = await fetch(`${redirectUri}?${query}`);
        expect({ query, status: knock.status }).toEqual({ query, status: 400 });
        expect(await knock.text()).toContain('Not this sign-in');
      }

      // The browser's sign-in, then its way back to the loopback address, still ends the wait.
      const authorization = await server.client.get(url.href);
      expect(authorization.status).toBe(303);
      const loginPage = new URL(authorization.header('location')!, server.url);
      const submitted = await server.client.post(loginPage.pathname, {
        body: {
          authRequestId: loginPage.searchParams.get('authRequestID'),
          username: user.username,
          password: user.password,
        },
      });
      const callback = await followToCallback(server.client, submitted, redirectUri);
      expect(callback.state).toBe(state);
      const back = await fetch(callback.location);
      expect(back.status).toBe(200);
      expect(await back.text()).toContain('<h1>Signed in</h1>');

      expect(await cli.exited).toBe(0);
      expect(JSON.parse(cli.stdout().trim().split('\n').at(-1)!)).toMatchObject({
        identity: { id: user.id, name: user.name },
      });
    } finally {
      await cli.stop();
    }
  });
});
