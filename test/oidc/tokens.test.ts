import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createLocalJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  authorizationPath,
  exchangeCode,
  followToCallback,
  newPkce,
  passwordLogin,
  refreshTokens,
  startAuthorization,
  submitLogin,
} from '../helpers/oidc-client.js';
import { enrolledUpdbUser, managementApi } from '../identities/identity-fixtures.js';

const admin = { username: ADMIN_USERNAME, password: ADMIN_PASSWORD };

describe('OIDC tokens: claims, refresh, PKCE, codes, redirect URIs', () => {
  let server: TestServer;
  let keys: JWTVerifyGetKey;
  let issuer: string;
  beforeAll(async () => {
    server = await startTestServer();
    keys = createLocalJWKSet((await server.client.get('/oidc/keys')).body);
    issuer = `${server.url}/oidc`;
  });
  afterAll(() => server.close());

  const currentIdentity = (accessToken: string) =>
    server.client.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${accessToken}` },
    });

  test('the token set and the claims of access and ID tokens are exactly those documented', async () => {
    const api = managementApi(server, await server.adminToken());
    const user = await enrolledUpdbUser(server, api, 'claims-user');
    const before = Math.floor(Date.now() / 1000);

    const { tokens, started } = await passwordLogin(server.client, user.username, user.password, {
      configTypes: ['ct-a'],
    });

    expect(tokens.token_type).toBe('Bearer');
    expect(tokens.expires_in).toBe(1800);
    expect(typeof tokens.refresh_token).toBe('string');
    expect(tokens.refresh_token!.split('.')).toHaveLength(1); // opaque

    const at = await jwtVerify(tokens.access_token, keys, { issuer, audience: 'svc', typ: 'at+jwt' });
    expect(at.protectedHeader).toEqual({ alg: 'RS256', typ: 'at+jwt', kid: expect.any(String) });
    const c = at.payload;
    expect(Object.keys(c).sort()).toEqual(
      [
        'amr',
        'aud',
        'auth_time',
        'client_id',
        'exp',
        'iat',
        'iss',
        'jti',
        'scope',
        'sub',
        'z_asid',
        'z_ct',
        'z_gen',
        'z_ia',
        'z_ice',
        'z_t',
      ].sort(),
    );
    expect(c.iss).toBe(issuer);
    expect(c.sub).toBe(user.id);
    expect(c.aud).toBe('svc');
    expect(c.client_id).toBe('svc');
    expect(c.scope).toBe('openid offline_access');
    expect(c.amr).toEqual(['pwd']);
    expect(c.auth_time).toBeGreaterThanOrEqual(before);
    expect(c.iat).toBeGreaterThanOrEqual(before);
    expect(c.exp! - c.iat!).toBe(1800);
    expect(typeof c.jti).toBe('string');
    expect(typeof c.z_asid).toBe('string');
    expect(c.z_ia).toBe(false);
    expect(c.z_ct).toEqual(['ct-a']);
    expect(c.z_t).toBe('a');
    expect(c.z_ice).toBe(false);
    expect(c.z_gen).toEqual(expect.any(Number));

    const id = await jwtVerify(tokens.id_token, keys, { issuer, audience: 'svc' });
    expect(id.protectedHeader.typ).toBeUndefined();
    expect(Object.keys(id.payload).sort()).toEqual(
      ['amr', 'aud', 'auth_time', 'exp', 'iat', 'iss', 'name', 'nonce', 'sub', 'z_asid', 'z_ia'].sort(),
    );
    expect(id.payload).toMatchObject({
      iss: issuer,
      sub: user.id,
      aud: 'svc',
      amr: ['pwd'],
      auth_time: c.auth_time,
      nonce: started.nonce,
      name: 'claims-user',
      z_ia: false,
      z_asid: c.z_asid,
    });
    expect(id.payload.exp! - id.payload.iat!).toBe(1800);
  });

  test('an admin gets z_ia true, and the access token works on current-identity', async () => {
    const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);

    const me = await currentIdentity(tokens.access_token);

    expect((await jwtVerify(tokens.access_token, keys)).payload.z_ia).toBe(true);
    expect(me.status).toBe(200);
    expect(me.body.data.name).toBe(ADMIN_USERNAME);
  });

  test('without offline_access no refresh token is issued', async () => {
    const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD, {
      scope: 'openid',
    });

    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.scope).toBe('openid');
  });

  test('a refresh rotates the refresh token; the API session (z_asid) stays the same', async () => {
    const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);

    const first = await refreshTokens(server.client, tokens.refresh_token!);
    const second = await refreshTokens(server.client, first.body.refresh_token);

    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(first.body.refresh_token).not.toBe(tokens.refresh_token);
    expect(second.body.refresh_token).not.toBe(first.body.refresh_token);
    expect(second.body.expires_in).toBe(1800);
    const sessions = [tokens, first.body, second.body].map((t) => jwtVerify(t.access_token, keys));
    const asids = (await Promise.all(sessions)).map((v) => v.payload.z_asid);
    expect(new Set(asids).size).toBe(1);
    expect((await currentIdentity(second.body.access_token)).status).toBe(200);
  });

  test('replaying a rotated refresh token revokes the grant and its API session', async () => {
    const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const rotated = await refreshTokens(server.client, tokens.refresh_token!);
    expect((await currentIdentity(rotated.body.access_token)).status).toBe(200);

    const replay = await refreshTokens(server.client, tokens.refresh_token!);
    const newest = await refreshTokens(server.client, rotated.body.refresh_token);
    const api = await currentIdentity(rotated.body.access_token);
    const original = await currentIdentity(tokens.access_token);

    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    expect(newest.status).toBe(400);
    expect(newest.body.error).toBe('invalid_grant');
    expect(api.status).toBe(401);
    expect(api.headerAll('www-authenticate')).toEqual([
      'Bearer realm="svc-oidc", error="invalid", error_description="token is invalid"',
    ]);
    expect(original.status).toBe(401);
  });

  test('a refresh token of a deleted identity fails with invalid_grant', async () => {
    const api = managementApi(server, await server.adminToken());
    const user = await enrolledUpdbUser(server, api, 'refresh-deleted');
    const { tokens } = await passwordLogin(server.client, user.username, user.password);

    expect((await api.delete(`/identities/${user.id}`)).status).toBe(200);
    const refresh = await refreshTokens(server.client, tokens.refresh_token!);

    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
    expect((await currentIdentity(tokens.access_token)).status).toBe(401);
  });

  test('PKCE: a wrong verifier is refused; a missing challenge and the plain method are rejected', async () => {
    const started = await startAuthorization(server.client);
    const { code } = await followToCallback(
      server.client,
      await submitLogin(server.client, started, { body: admin }),
    );
    const pkce = newPkce();

    const wrong = await exchangeCode(server.client, { code, verifier: newPkce().verifier });
    const missing = await server.client.get(
      authorizationPath({ codeChallenge: null, codeChallengeMethod: null }, pkce, 's1', 'n1'),
    );
    const plain = await server.client.get(
      authorizationPath({ codeChallenge: pkce.verifier, codeChallengeMethod: 'plain' }, pkce, 's2', 'n2'),
    );

    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
    for (const [res, state] of [
      [missing, 's1'],
      [plain, 's2'],
    ] as const) {
      expect(res.status).toBe(303);
      const location = new URL(res.header('location')!);
      expect(location.searchParams.get('error')).toBe('invalid_request');
      expect(location.searchParams.get('state')).toBe(state);
      expect(location.searchParams.get('code')).toBeNull();
    }
  });

  test('a code is usable once: reuse fails and revokes what it issued', async () => {
    const started = await startAuthorization(server.client);
    const { code } = await followToCallback(
      server.client,
      await submitLogin(server.client, started, { body: admin }),
    );

    const first = await exchangeCode(server.client, { code, verifier: started.pkce.verifier });
    const reuse = await exchangeCode(server.client, { code, verifier: started.pkce.verifier });

    expect(first.status).toBe(200);
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toBe('invalid_grant');
    expect((await refreshTokens(server.client, first.body.refresh_token)).status).toBe(400);
  });

  test('16 parallel redemptions of one code: exactly one succeeds', async () => {
    const started = await startAuthorization(server.client);
    const { code } = await followToCallback(
      server.client,
      await submitLogin(server.client, started, { body: admin }),
    );

    const results = await Promise.all(
      Array.from({ length: 16 }, () =>
        exchangeCode(server.client, { code, verifier: started.pkce.verifier }),
      ),
    );

    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 400 && r.body.error === 'invalid_grant')).toHaveLength(15);
  });

  test('bad redirect URIs are refused with a 400 JSON error and never redirected to', async () => {
    const pkce = newPkce();
    const bad = [
      'http://127.0.0.1:8080/other/path',
      'http://127.0.0.1:abc/auth/callback',
      'http://127.0.0.1/auth/callback',
      'http://evil.example:8080/auth/callback',
      'http://127.0.0.1:8080/auth/callback?extra=1',
      'http://user@127.0.0.1:8080/auth/callback',
      'http://127.0.0.1:99999/auth/callback',
    ];

    const responses = await Promise.all(
      bad.map((redirectUri) => server.client.get(authorizationPath({ redirectUri }, pkce, 's', 'n'))),
    );
    const missing = await server.client.get(
      authorizationPath({}, pkce, 's', 'n').replace(/&?redirect_uri=[^&]*/, ''),
    );

    for (const res of [...responses, missing]) {
      expect(res.status).toBe(400);
      expect(res.header('location')).toBeUndefined();
      expect(res.body.error).toMatch(/^invalid_(redirect_uri|request)$/);
    }
  });

  test('every default redirect pattern accepts any port of digits, over http and https', async () => {
    const pkce = newPkce();
    const good = [
      'http://127.0.0.1:1/auth/callback',
      'http://localhost:65535/auth/callback',
      'https://localhost:8443/auth/callback',
      'https://127.0.0.1:443/auth/callback',
    ];

    const responses = await Promise.all(
      good.map((redirectUri) => server.client.get(authorizationPath({ redirectUri }, pkce, 's', 'n'))),
    );

    for (const res of responses) {
      expect(res.status).toBe(303);
      expect(res.header('location')).toMatch(/^\/oidc\/login\/username\?authRequestID=/);
    }
  });
});

describe('configured redirect URI patterns replace the defaults', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      env: {
        SVC_OIDC_REDIRECT_URIS: 'https://app.example.com:*/cb,http://localhost:7777/exact',
      },
    });
  });
  afterAll(() => server.close());

  test('only the configured patterns are accepted', async () => {
    const pkce = newPkce();
    const status = async (redirectUri: string) =>
      (await server.client.get(authorizationPath({ redirectUri }, pkce, 's', 'n'))).status;

    expect(await status('https://app.example.com:9000/cb')).toBe(303);
    expect(await status('http://localhost:7777/exact')).toBe(303);
    expect(await status('http://localhost:7778/exact')).toBe(400);
    expect(await status('http://127.0.0.1:8080/auth/callback')).toBe(400);
    expect(await status('https://app.example.com/cb')).toBe(400);
  });
});
