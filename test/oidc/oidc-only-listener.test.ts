import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { expectError } from '../helpers/expect-error.js';
import type { HttpsClient } from '../helpers/https-client.js';
import { passwordLogin, refreshTokens } from '../helpers/oidc-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';

describe('a listener with edge-oidc bound alone', () => {
  let server: TestServer;
  let oidcOnly: HttpsClient;
  let issuer: string;
  beforeAll(async () => {
    // Two interfaces: one listener per interface (127.0.0.0/8 is all loopback on Linux).
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
    const url = server.app.listeners.find((l) => l.name === 'oidc')!.urls[0]!;
    expect(url).not.toBe(server.url);
    oidcOnly = server.newClient({}, url);
    issuer = `${url}/oidc`;
  });
  afterAll(() => server.close());

  test('serves discovery, the login and the tokens under its own issuer', async () => {
    const discovery = await oidcOnly.get('/.well-known/openid-configuration');
    const { tokens } = await passwordLogin(oidcOnly, ADMIN_USERNAME, ADMIN_PASSWORD);
    const refreshed = await refreshTokens(oidcOnly, tokens.refresh_token!);

    expect(discovery.status).toBe(200);
    expect(discovery.body.issuer).toBe(issuer);
    expect(discovery.body.token_endpoint).toBe(`${issuer}/token`);
    const keys = createLocalJWKSet((await oidcOnly.get('/oidc/keys')).body);
    const { payload } = await jwtVerify(tokens.access_token, keys, { issuer, audience: 'svc' });
    expect(payload.z_ia).toBe(true);
    expect(refreshed.status).toBe(200);
    // The Edge APIs, on their own listener, accept the token this issuer signed.
    const me = await server.client.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(me.status).toBe(200);
  });

  test('answers 404 for the Edge client and management APIs', async () => {
    const login = await oidcOnly.post('/edge/management/v1/authenticate?method=password', {
      body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
    });
    const clientLogin = await oidcOnly.post('/edge/client/v1/authenticate?method=password', {
      body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
    });
    const me = await oidcOnly.get('/edge/client/v1/current-identity', {
      headers: { 'svc-session': await server.adminToken() },
    });

    for (const res of [login, clientLogin, me]) expectError(res, { status: 404, code: 'NOT_FOUND' });
    // Control: the same request succeeds on the Edge listener.
    expect(
      (
        await server.client.post('/edge/management/v1/authenticate?method=password', {
          body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
        })
      ).status,
    ).toBe(200);
  });
});
