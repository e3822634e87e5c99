import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { newPkce } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

describe('account page: only where a listener serves both edge-client and edge-oidc', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      overrides: (tree) => {
        tree.web = [
          {
            name: 'edge',
            bindPoints: [{ interface: '127.0.0.1:0', address: '127.0.0.1:0' }],
            apis: [{ binding: 'edge-client' }, { binding: 'edge-management' }],
          },
          {
            name: 'oidc',
            bindPoints: [{ interface: '127.0.0.2:0', address: '127.0.0.2:0' }],
            apis: [{ binding: 'edge-oidc' }],
          },
        ];
      },
    });
  });
  afterAll(() => server.close());

  test('neither listener serves the page, and the OIDC-only issuer accepts no account callback', async () => {
    const oidcUrl = server.app.listeners.find((l) => l.name === 'oidc')!.urls[0]!;
    const oidc = server.newClient({}, oidcUrl);
    expect((await server.client.get('/account/')).status).toBe(404);
    expect((await oidc.get('/account/')).status).toBe(404);
    const pkce = newPkce();
    const q = new URLSearchParams({
      response_type: 'code',
      client_id: 'svc',
      redirect_uri: `${oidcUrl}/account/callback`,
      scope: 'openid',
      state: 's',
      nonce: 'n',
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256',
    });
    const refused = await oidc.get(`/oidc/authorization?${q}`);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_redirect_uri');
  });
});
