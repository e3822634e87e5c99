import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { importJWK, SignJWT } from 'jose';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { passwordLogin, refreshTokens, type TokenSet } from '../helpers/oidc-client.js';
import { enrolledUpdbUser, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import * as oc from 'openid-client';
import { currentSigningJwk, discoverClient, issuerOf, payloadOf } from './oidc-fixtures.js';

describe('userinfo, end_session, revocation and bearer tokens on the Edge APIs', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
  const login = async (): Promise<TokenSet> =>
    (await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD)).tokens;
  /** Access and refresh token of a login both stopped working. */
  async function expectSessionEnded(tokens: TokenSet) {
    const me = await server.client.get('/edge/client/v1/current-identity', bearer(tokens.access_token));
    const refresh = await refreshTokens(server.client, tokens.refresh_token!);
    expect(me.status).toBe(401);
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
  }

  test('userinfo refuses an access token refreshed down to a scope without openid: 403 insufficient_scope', async () => {
    const tokens = await login();
    const narrowed = await server.client.post('/oidc/token', {
      form: {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: 'svc',
        scope: 'offline_access',
      },
    });
    expect(narrowed.status).toBe(200);

    const res = await server.client.get('/oidc/userinfo', bearer(narrowed.body.access_token));
    const full = await server.client.get('/oidc/userinfo', bearer(tokens.access_token));

    expect(res.status).toBe(403);
    expect(res.header('www-authenticate')).toBe(
      'Bearer realm="svc-oidc", error="insufficient_scope", error_description="the access token lacks the openid scope"',
    );
    expect(res.body).toEqual({ error: 'insufficient_scope', error_description: expect.any(String) });
    expect(full.status).toBe(200);
  });

  test('a bearer access token authenticates current-identity on the client and management APIs', async () => {
    const user = await enrolledUpdbUser(server, api, 'bearer-user');
    const { tokens } = await passwordLogin(server.client, user.username, user.password);

    const client = await server.client.get('/edge/client/v1/current-identity', bearer(tokens.access_token));
    const management = await server.client.get(
      '/edge/management/v1/current-identity',
      bearer(tokens.access_token),
    );
    const session = await server.client.get(
      '/edge/client/v1/current-api-session',
      bearer(tokens.access_token),
    );
    const adminOnly = await server.client.get('/edge/management/v1/identities', bearer(tokens.access_token));

    expect(client.status).toBe(200);
    expect(client.body.data).toMatchObject({ id: user.id, name: 'bearer-user', isAdmin: false });
    expect(management.status).toBe(200);
    const exp = payloadOf(tokens.access_token).exp;
    expect(client.header('expires-at')).toBe(new Date(exp * 1000).toISOString());
    expect(Number(client.header('expiration-seconds'))).toBeGreaterThan(0);
    expect(session.body.data).toMatchObject({
      id: payloadOf(tokens.access_token).z_asid,
      identityId: user.id,
    });
    expect(adminOnly.status).toBe(403);
  });

  test('an ID token, a forged token and an unsigned token are refused as bearer tokens', async () => {
    const tokens = await login();
    const [header, payload] = tokens.access_token.split('.');
    const forged = `${header}.${payload}.${Buffer.from('not the signature').toString('base64url')}`;
    const unsigned = `${Buffer.from('{"alg":"none","typ":"at+jwt"}').toString('base64url')}.${payload}.`;

    for (const token of [tokens.id_token, forged, unsigned, 'not-a-jwt']) {
      const res = await server.client.get('/edge/client/v1/current-identity', bearer(token));
      expect(res.status).toBe(401);
      expect(res.headerAll('www-authenticate')).toEqual([
        'Bearer realm="svc-oidc", error="invalid", error_description="token is invalid"',
      ]);
    }
  });

  test('userinfo answers the claims of the identity behind an access token, and 401 otherwise', async () => {
    const tokens = await login();

    const get = await server.client.get('/oidc/userinfo', bearer(tokens.access_token));
    const post = await server.client.post('/oidc/userinfo', bearer(tokens.access_token));
    const idToken = await server.client.get('/oidc/userinfo', bearer(tokens.id_token));
    const none = await server.client.get('/oidc/userinfo');

    expect(get.status).toBe(200);
    expect(get.body).toEqual({ sub: payloadOf(tokens.access_token).sub, name: ADMIN_USERNAME });
    expect(post.body).toEqual(get.body);
    expect(idToken.status).toBe(401);
    expect(none.status).toBe(401);
  });

  test('userinfo refuses tokens as RFC 6750 §3.1 says: invalid_token with a description, nothing when no token came', async () => {
    const tokens = await login();
    const jwk = await currentSigningJwk(server);
    const claims = payloadOf(tokens.access_token);
    const expired = await new SignJWT({
      ...claims,
      iat: claims.iat - 3600,
      exp: Math.floor(Date.now() / 1000) - 60,
    })
      .setProtectedHeader({ alg: 'RS256', kid: jwk.kid as string, typ: 'at+jwt' })
      .sign(await importJWK(jwk, 'RS256'));

    const none = await server.client.get('/oidc/userinfo');
    const refused = await Promise.all(
      [expired, tokens.id_token, 'not-a-jwt'].map((t) => server.client.get('/oidc/userinfo', bearer(t))),
    );
    const postedExpired = await server.client.post('/oidc/userinfo', bearer(expired));
    const edge = await server.client.get('/edge/client/v1/current-identity', bearer(expired));

    expect(none.status).toBe(401);
    expect(none.headerAll('www-authenticate')).toEqual(['Bearer realm="svc-oidc"']);
    expect(none.body).toEqual({});
    const [expiredRes, idTokenRes, garbageRes] = refused;
    for (const [res, description] of [
      [expiredRes, 'token expired'],
      [postedExpired, 'token expired'],
      [idTokenRes, 'token is invalid'],
      [garbageRes, 'token is invalid'],
    ] as const) {
      expect(res.status).toBe(401);
      expect(res.headerAll('www-authenticate')).toEqual([
        `Bearer realm="svc-oidc", error="invalid_token", error_description="${description}"`,
      ]);
      expect(res.body).toEqual({ error: 'invalid_token', error_description: description });
    }
    // The Edge APIs keep their own challenges.
    expect(edge.headerAll('www-authenticate')).toEqual([
      'Bearer realm="svc-oidc", error="expired", error_description="token expired"',
    ]);
  });

  test('openid-client reads the userinfo refusal as an invalid_token challenge', async () => {
    const { config, close } = await discoverClient(server, issuerOf(server));
    try {
      const error = await oc.fetchUserInfo(config, 'not-a-jwt', oc.skipSubjectCheck).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(oc.WWWAuthenticateChallengeError);
      const challenge = (error as oc.WWWAuthenticateChallengeError).cause[0]!;
      expect(challenge.scheme).toBe('bearer');
      expect(challenge.parameters).toMatchObject({ realm: 'svc-oidc', error: 'invalid_token' });
    } finally {
      await close();
    }
  });

  test('end_session (GET) with an ID token hint ends the API session and redirects to an allowed URI', async () => {
    const tokens = await login();
    const target = 'http://127.0.0.1:5555/auth/logout';

    const res = await server.client.get(
      `/oidc/end_session?id_token_hint=${tokens.id_token}&post_logout_redirect_uri=${encodeURIComponent(target)}&state=xyz`,
    );

    expect(res.status).toBe(303);
    expect(res.header('location')).toBe(`${target}?state=xyz`);
    await expectSessionEnded(tokens);
  });

  test('end_session (POST form) without a redirect target answers 200 {} or a signed-out page', async () => {
    const json = await login();
    const html = await login();

    const a = await server.client.post('/oidc/end_session', { form: { id_token_hint: json.id_token } });
    const b = await server.client.post('/oidc/end_session', {
      form: { id_token_hint: html.id_token },
      headers: { accept: 'text/html' },
    });

    expect(a.status).toBe(200);
    expect(a.body).toEqual({});
    expect(b.status).toBe(200);
    expect(b.text).toContain('signed out');
    expect(b.header('content-security-policy')).toContain("frame-ancestors 'none'");
    await expectSessionEnded(json);
    await expectSessionEnded(html);
  });

  test('a post_logout_redirect_uri that no pattern allows is never redirected to', async () => {
    const tokens = await login();

    const res = await server.client.get(
      `/oidc/end_session?id_token_hint=${tokens.id_token}&post_logout_redirect_uri=${encodeURIComponent(
        'https://evil.example/auth/logout',
      )}`,
    );

    expect(res.status).toBe(200);
    expect(res.header('location')).toBeUndefined();
    await expectSessionEnded(tokens);
  });

  test('an expired ID token hint is accepted; a hint we did not sign is refused', async () => {
    const tokens = await login();
    const jwk = await currentSigningJwk(server);
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ ...payloadOf(tokens.id_token), iat: now - 7200, exp: now - 3600 })
      .setProtectedHeader({ alg: 'RS256', kid: jwk.kid as string })
      .sign(await importJWK(jwk, 'RS256'));
    const stranger = await new SignJWT(payloadOf(tokens.id_token))
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('x'.repeat(32)));

    const refused = await server.client.post('/oidc/end_session', { body: { id_token_hint: stranger } });
    const accessTokenHint = await server.client.post('/oidc/end_session', {
      body: { id_token_hint: tokens.access_token },
    });
    const accepted = await server.client.post('/oidc/end_session', { body: { id_token_hint: expired } });

    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'id_token_hint' },
    });
    expect(accessTokenHint.status).toBe(400);
    expect(accepted.status).toBe(200);
    await expectSessionEnded(tokens);
  });

  test('/oidc/revoke of a refresh token ends its grant and its API session', async () => {
    const tokens = await login();

    const res = await server.client.post('/oidc/revoke', {
      form: { token: tokens.refresh_token!, token_type_hint: 'refresh_token', client_id: 'svc' },
    });

    expect(res.status).toBe(200);
    await expectSessionEnded(tokens);
  });

  test('deleting the current API session with a bearer token ends that session', async () => {
    const tokens = await login();

    const res = await server.client.delete(
      '/edge/client/v1/current-api-session',
      bearer(tokens.access_token),
    );

    expect(res.status).toBe(200);
    expect(
      (await server.client.get('/edge/client/v1/current-identity', bearer(tokens.access_token))).status,
    ).toBe(401);
  });
});

describe('post-logout URI patterns from the binding options', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      overrides: (tree) => {
        tree.web = [
          {
            name: 'all',
            bindPoints: [{ interface: '127.0.0.1:0', address: '127.0.0.1:0' }],
            apis: [
              { binding: 'edge-client' },
              { binding: 'edge-management' },
              { binding: 'edge-oidc', options: { postLogoutURIs: ['https://app.example.com:*/bye'] } },
            ],
          },
        ];
      },
    });
  });
  afterAll(() => server.close());

  test('a configured post-logout pattern replaces the defaults', async () => {
    const first = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const second = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const endWith = (idToken: string, uri: string) =>
      server.client.get(
        `/oidc/end_session?id_token_hint=${idToken}&post_logout_redirect_uri=${encodeURIComponent(uri)}`,
      );

    const configured = await endWith(first.tokens.id_token, 'https://app.example.com:8443/bye');
    const formerDefault = await endWith(second.tokens.id_token, 'http://127.0.0.1:5555/auth/logout');

    expect(configured.status).toBe(303);
    expect(configured.header('location')).toBe('https://app.example.com:8443/bye');
    expect(formerDefault.status).toBe(200);
  });
});
