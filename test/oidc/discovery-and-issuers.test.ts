import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { request } from 'node:https';
import { createLocalJWKSet, jwtVerify } from 'jose';
import * as oc from 'openid-client';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { passwordLogin } from '../helpers/oidc-client.js';
import { discoverClient, issuerOf } from './oidc-fixtures.js';

/** A GET with a forged Host header (TLS still verified, against `localhost`). */
function getWithHost(
  server: TestServer,
  path: string,
  host: string,
  {
    address = '127.0.0.1',
    port = Number(new URL(server.url).port),
    headers = {},
  }: { address?: string; port?: number; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: address,
        port,
        path,
        ca: server.ca,
        servername: 'localhost',
        headers: { ...headers, host },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        const json = /json/.test(res.headers['content-type'] ?? '');
        res.on('end', () => resolve({ status: res.statusCode!, body: json ? JSON.parse(text) : text }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('OIDC discovery, keys and issuers per bind-point address', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test('discovery is served at both well-known paths with the same document and the login endpoints', async () => {
    const root = await server.client.get('/.well-known/openid-configuration');
    const prefixed = await server.client.get('/oidc/.well-known/openid-configuration');

    expect(root.status).toBe(200);
    expect(prefixed.status).toBe(200);
    expect(root.body).toEqual(prefixed.body);
    const issuer = issuerOf(server);
    expect(root.body).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/authorization`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/keys`,
      userinfo_endpoint: `${issuer}/userinfo`,
      end_session_endpoint: `${issuer}/end_session`,
      revocation_endpoint: `${issuer}/revoke`,
      introspection_endpoint: `${issuer}/token/introspection`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      svc_login_endpoints: {
        password: `${issuer}/login/username`,
        cert: `${issuer}/login/cert`,
        ext_jwt: `${issuer}/login/ext-jwt`,
        totp: `${issuer}/login/totp`,
        totp_enroll: `${issuer}/login/totp/enroll`,
        totp_enroll_verify: `${issuer}/login/totp/enroll/verify`,
        auth_queries: `${issuer}/login/auth-queries`,
      },
    });
    // DPoP and PAR are not offered.
    expect(root.body.dpop_signing_alg_values_supported).toBeUndefined();
    expect(root.body.pushed_authorization_request_endpoint).toBeUndefined();
  });

  test('openid-client discovers the issuer and its tokens verify against the published JWKS', async () => {
    const { config, close } = await discoverClient(server, issuerOf(server));
    try {
      expect(config.serverMetadata().issuer).toBe(issuerOf(server));
      const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
      const jwks = await server.client.get('/oidc/keys');

      expect(jwks.status).toBe(200);
      expect(jwks.body.keys.length).toBeGreaterThanOrEqual(1);
      for (const key of jwks.body.keys) {
        expect(key).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
        expect(key.d).toBeUndefined();
      }
      const keySet = createLocalJWKSet(jwks.body);
      const at = await jwtVerify(tokens.access_token, keySet, { issuer: issuerOf(server), audience: 'svc' });
      const id = await jwtVerify(tokens.id_token, keySet, { issuer: issuerOf(server), audience: 'svc' });
      expect(at.protectedHeader).toMatchObject({ alg: 'RS256', typ: 'at+jwt' });
      expect(id.protectedHeader.alg).toBe('RS256');
    } finally {
      await close();
    }
  });

  test('each configured address is its own issuer: iss follows the Host the client used', async () => {
    const localhostClient = server.newClient({}, server.url.replace('127.0.0.1', 'localhost'));

    const viaLocalhost = await passwordLogin(localhostClient, ADMIN_USERNAME, ADMIN_PASSWORD);
    const viaLoopback = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const discovery = await localhostClient.get('/.well-known/openid-configuration');

    const localIssuer = issuerOf(server, 'localhost');
    expect(discovery.body.issuer).toBe(localIssuer);
    expect(viaLocalhost.callback.iss).toBe(localIssuer);
    expect(viaLoopback.callback.iss).toBe(issuerOf(server));
    const keys = createLocalJWKSet((await server.client.get('/oidc/keys')).body);
    await expect(
      jwtVerify(viaLocalhost.tokens.access_token, keys, { issuer: localIssuer }),
    ).resolves.toBeTruthy();
    await expect(
      jwtVerify(viaLoopback.tokens.access_token, keys, { issuer: issuerOf(server) }),
    ).resolves.toBeTruthy();
    // A token of one issuer is still accepted on API calls made through the other address.
    const me = await server.client.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${viaLocalhost.tokens.access_token}` },
    });
    expect(me.status).toBe(200);
  });

  test('a Host that matches no configured address gets a JSON 404, never an issuer', async () => {
    const host = `evil.example:${new URL(server.url).port}`;

    const discovery = await getWithHost(server, '/.well-known/openid-configuration', host);
    const prefixed = await getWithHost(server, '/oidc/.well-known/openid-configuration', host);
    const authorization = await getWithHost(server, '/oidc/authorization?client_id=svc', host);
    const keys = await getWithHost(server, '/oidc/keys', host);

    for (const res of [discovery, prefixed, authorization, keys]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
      expect(JSON.stringify(res.body)).not.toContain('evil.example');
    }
    // The same request with a configured Host is served.
    expect((await getWithHost(server, '/oidc/keys', `localhost:${new URL(server.url).port}`)).status).toBe(
      200,
    );
  });

  test('unknown paths under /oidc get the JSON 404 envelope', async () => {
    for (const path of ['/oidc', '/oidc/nope', '/oidc/introspection', '/oidc/reg', '/oidc/login/nope']) {
      const res = await server.client.get(path);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });

  test('openid-client completes a full flow: discovery, PKCE, login, code exchange, userinfo', async () => {
    const { config, close } = await discoverClient(server, issuerOf(server));
    try {
      const verifier = oc.randomPKCECodeVerifier();
      const state = oc.randomState();
      const nonce = oc.randomNonce();
      const redirectUri = 'http://127.0.0.1:43210/auth/callback';
      const url = oc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'openid offline_access',
        code_challenge: await oc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
        method: 'password',
      });
      const start = await server.client.get(url.pathname + url.search);
      const login = await server.client.post(new URL(start.header('location')!, server.url).pathname, {
        body: {
          authRequestId: new URL(start.header('location')!, server.url).searchParams.get('authRequestID'),
          username: ADMIN_USERNAME,
          password: ADMIN_PASSWORD,
        },
      });
      expect(login.status).toBe(303);

      const tokens = await oc.authorizationCodeGrant(config, new URL(login.header('location')!), {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
      });
      const claims = tokens.claims()!;
      const info = await oc.fetchUserInfo(config, tokens.access_token, claims.sub);
      const refreshed = await oc.refreshTokenGrant(config, tokens.refresh_token!);

      expect(claims.iss).toBe(issuerOf(server));
      expect(claims.name).toBe(ADMIN_USERNAME);
      expect(tokens.token_type.toLowerCase()).toBe('bearer');
      expect(info).toMatchObject({ sub: claims.sub, name: ADMIN_USERNAME });
      expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
      expect(refreshed.claims()!.sub).toBe(claims.sub);
    } finally {
      await close();
    }
  });
});

describe('a Host naming another listener', () => {
  const partnerRedirect = 'https://partner.example.com/auth/callback';
  let server: TestServer;
  let portA: number;
  let hostB: string;
  beforeAll(async () => {
    server = await startTestServer({
      overrides: (tree) => {
        tree.web = [
          {
            name: 'a',
            bindPoints: [{ interface: '127.0.0.1:0', address: '127.0.0.1:0' }],
            apis: [{ binding: 'edge-client' }, { binding: 'edge-management' }, { binding: 'edge-oidc' }],
          },
          {
            name: 'b',
            bindPoints: [{ interface: '127.0.0.2:0', address: '127.0.0.2:0' }],
            apis: [{ binding: 'edge-oidc', options: { redirectURIs: [partnerRedirect] } }],
          },
        ];
      },
    });
    portA = Number(new URL(server.url).port);
    hostB = new URL(server.app.listeners[1]!.urls[0]!).host;
  });
  afterAll(() => server.close());

  const authorizationWith = (redirectUri: string) =>
    '/oidc/authorization?' +
    new URLSearchParams({
      client_id: 'svc',
      response_type: 'code',
      scope: 'openid',
      redirect_uri: redirectUri,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGeSJ-0eTKk',
      code_challenge_method: 'S256',
      state: 'state-1',
    }).toString();

  test("on listener A's socket, B's address gets the unknown-host 404 for discovery and authorization", async () => {
    const onA = (path: string, host: string) => getWithHost(server, path, host, { port: portA });

    const discovery = await onA('/.well-known/openid-configuration', hostB);
    const authorization = await onA(authorizationWith(partnerRedirect), hostB);
    const unknown = await onA('/.well-known/openid-configuration', `evil.example:${portA}`);
    const onOwnSocket = await getWithHost(server, '/.well-known/openid-configuration', hostB, {
      address: '127.0.0.2',
      port: Number(hostB.split(':')[1]),
    });

    const authorizationOnOwnSocket = await getWithHost(server, authorizationWith(partnerRedirect), hostB, {
      address: '127.0.0.2',
      port: Number(hostB.split(':')[1]),
    });

    for (const res of [discovery, authorization]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        ...unknown.body,
        error: { ...unknown.body.error, requestId: res.body.error.requestId },
      });
    }
    expect(onOwnSocket.status).toBe(200);
    expect(onOwnSocket.body.issuer).toBe(`https://${hostB}/oidc`);
    expect(authorizationOnOwnSocket.status).toBe(303);
  });

  test("on listener A's socket, B's address is treated by the management API like any unknown host", async () => {
    const token = await server.adminToken();
    const headers = { 'svc-session': token };

    const withB = await getWithHost(server, '/edge/management/v1/identities', hostB, {
      port: portA,
      headers,
    });
    const withUnknown = await getWithHost(server, '/edge/management/v1/identities', `evil.example:${portA}`, {
      port: portA,
      headers,
    });

    expect(withB.status).toBe(withUnknown.status);
    expect(withB.body.data).toEqual(withUnknown.body.data);
  });
});
