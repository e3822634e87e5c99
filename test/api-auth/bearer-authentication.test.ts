import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { importJWK, SignJWT } from 'jose';
import { passwordLogin, type TokenSet } from '../helpers/oidc-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { currentSigningJwk, payloadOf } from '../oidc/oidc-fixtures.js';
import { enrolledUpdbUser, managementApi } from '../identities/identity-fixtures.js';

const INVALID = 'Bearer realm="svc-oidc", error="invalid", error_description="token is invalid"';
const EXPIRED = 'Bearer realm="svc-oidc", error="expired", error_description="token expired"';

/**
 * Leaves out what each process reads on its own timers, not per request: the revocation catch-up
 * (every second), webhook delivery (every second) and the signing-key watcher (its poll lands in a
 * slow run on a busy machine).
 */
const perRequest = (statements: string[]) =>
  statements.filter(
    (sql) =>
      !sql.includes('"revocations"') &&
      !/\bwebhook_/.test(sql) &&
      !/^select \* from "signing_keys"/.test(sql),
  );
describe('bearer tokens on the edge APIs', () => {
  let server: TestServer;
  let admin: TokenSet;
  beforeAll(async () => {
    server = await startTestServer();
    admin = (await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD)).tokens;
  });
  afterAll(() => server.close());

  const call = (path: string, authorization: string | string[]) =>
    server.client.get(path, { headers: { authorization } });
  const me = (token: string) => call('/edge/client/v1/current-identity', `Bearer ${token}`);

  /** Re-signs claims with the controller's own current key: valid signatures, chosen contents. */
  async function mint(claims: Record<string, unknown>, header: Record<string, unknown> = { typ: 'at+jwt' }) {
    const jwk = await currentSigningJwk(server);
    const key = await importJWK(jwk, 'RS256');
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: jwk.kid as string, ...header })
      .sign(key);
  }

  test('an access token authenticates on both APIs and sets the expiry headers from its exp', async () => {
    const exp = payloadOf(admin.access_token).exp as number;
    for (const api of ['client', 'management']) {
      const before = Date.now();
      const res = await call(`/edge/${api}/v1/current-identity`, `Bearer ${admin.access_token}`);
      const after = Date.now();
      expect(res.status).toBe(200);
      expect(res.body.data.name).toBe(ADMIN_USERNAME);
      expect(res.header('expires-at')).toBe(new Date(exp * 1000).toISOString());
      // Counted down from an instant inside the request, however long a loaded machine took.
      const seconds = Number(res.header('expiration-seconds'));
      expect(seconds).toBeGreaterThanOrEqual(Math.floor((exp * 1000 - after) / 1000));
      expect(seconds).toBeLessThanOrEqual(Math.floor((exp * 1000 - before) / 1000));
    }
  });

  test('an expired access token gets the expired challenge', async () => {
    const claims = payloadOf(admin.access_token);
    const expired = await mint({
      ...claims,
      iat: claims.iat - 3600,
      exp: Math.floor(Date.now() / 1000) - 60,
    });
    const res = await me(expired);
    expect(res.status).toBe(401);
    expect(res.headerAll('www-authenticate')).toEqual([EXPIRED]);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  test('tampered, foreign and malformed tokens get the invalid challenge', async () => {
    const [h, p, s] = admin.access_token.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payloadOf(admin.access_token), z_ia: true, sub: 'x' })).toString('base64url')}.${s}`;
    const foreignIssuer = await mint({ ...payloadOf(admin.access_token), iss: 'https://evil.example/oidc' });
    for (const token of [tampered, foreignIssuer, 'not-a-jwt', `${h}.${p}.`]) {
      const res = await me(token);
      expect(res.status).toBe(401);
      expect(res.headerAll('www-authenticate')).toEqual([INVALID]);
    }
  });

  test('an ID token, a refresh token or a token of another type is not an access token', async () => {
    const otherType = await mint({ ...payloadOf(admin.access_token), z_t: 'r' });
    const noType = await mint({ ...payloadOf(admin.access_token), z_t: undefined });
    const idTyped = await mint(payloadOf(admin.access_token), { typ: 'JWT' });
    for (const token of [admin.id_token, admin.refresh_token!, otherType, noType, idTyped]) {
      const res = await me(token);
      expect(res.status).toBe(401);
      expect(res.headerAll('www-authenticate')).toEqual([INVALID]);
    }
  });

  test('our token is found among several bearer values, in one header or two', async () => {
    const other = 'eyJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIn0.c2ln';
    expect(
      (await call('/edge/client/v1/current-identity', `Bearer ${other}, Bearer ${admin.access_token}`))
        .status,
    ).toBe(200);
    expect(
      (await call('/edge/client/v1/current-identity', [`Bearer ${other}`, `Bearer ${admin.access_token}`]))
        .status,
    ).toBe(200);
  });

  test('management endpoints need an admin: a non-admin bearer gets 403, an admin 200', async () => {
    const api = managementApi(server, await server.adminToken());
    const user = await enrolledUpdbUser(server, api, 'plain-user');
    const { tokens } = await passwordLogin(server.client, user.username, user.password);
    const asUser = await call('/edge/management/v1/identities', `Bearer ${tokens.access_token}`);
    expect(asUser.status).toBe(403);
    expect(asUser.body.error.code).toBe('FORBIDDEN');
    expect(asUser.header('www-authenticate')).toBeUndefined();
    expect((await call('/edge/management/v1/identities', `Bearer ${admin.access_token}`)).status).toBe(200);
    // The client API is open to any identity.
    expect((await me(tokens.access_token)).status).toBe(200);
  });

  test('privilege changes revoke the tokens issued before them, and new logins carry the change', async () => {
    const api = managementApi(server, await server.adminToken());
    const user = await enrolledUpdbUser(server, api, 'promoted-user');
    const before = (await passwordLogin(server.client, user.username, user.password)).tokens;
    expect((await api.patch(`/identities/${user.id}`, { body: { isAdmin: true } })).status).toBe(200);
    expect((await me(before.access_token)).headerAll('www-authenticate')).toEqual([INVALID]);
    const after = (await passwordLogin(server.client, user.username, user.password)).tokens;
    expect(payloadOf(after.access_token).z_ia).toBe(true);
    expect((await call('/edge/management/v1/identities', `Bearer ${after.access_token}`)).status).toBe(200);
  });

  test('ending the API session with the bearer token revokes it', async () => {
    const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const ended = await server.client.delete('/edge/client/v1/current-api-session', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(ended.status).toBe(200);
    expect((await me(tokens.access_token)).headerAll('www-authenticate')).toEqual([INVALID]);
    expect((await me(admin.access_token)).status).toBe(200);
  });

  test('anonymous endpoints never send challenges', async () => {
    for (const path of [
      '/health/ready',
      '/.well-known/est/cacerts',
      '/oidc/keys',
      '/edge/client/v1/external-jwt-signers',
    ]) {
      const res = await call(path, 'Bearer garbage');
      expect(res.status).toBe(200);
      expect(res.header('www-authenticate')).toBeUndefined();
    }
  });

  test('bearer-authenticated requests read nothing from the database', async () => {
    const queries: string[] = [];
    const record = (q: { sql: string }) => queries.push(q.sql);
    await me(admin.access_token); // warm the per-identity cache
    server.app.knex.on('query', record);
    try {
      for (let i = 0; i < 50; i++) {
        const res = await call('/edge/client/v1/current-api-session', `Bearer ${admin.access_token}`);
        expect(res.status).toBe(200);
      }
    } finally {
      server.app.knex.off('query', record);
    }
    expect(perRequest(queries)).toEqual([]);
  });

  test('current-identity reads nothing from the database once warm, and shows every change at once', async () => {
    const api = managementApi(server, await server.adminToken());
    const user = await enrolledUpdbUser(server, api, 'cached-detail-user');
    const { tokens } = await passwordLogin(server.client, user.username, user.password);
    const detail = async () => {
      const res = await me(tokens.access_token);
      expect(res.status).toBe(200);
      return res.body.data;
    };
    expect((await detail()).name).toBe('cached-detail-user');

    const queries: string[] = [];
    const record = (q: { sql: string }) => queries.push(q.sql);
    server.app.knex.on('query', record);
    try {
      for (let i = 0; i < 20; i++) await detail();
    } finally {
      server.app.knex.off('query', record);
    }
    expect(perRequest(queries)).toEqual([]);

    expect(
      (await api.patch(`/identities/${user.id}`, { body: { name: 'cached-detail-renamed' } })).status,
    ).toBe(200);
    expect((await detail()).name).toBe('cached-detail-renamed');
    const roles = { roleAttributes: ['cached-role'] };
    expect((await api.patch(`/identities/${user.id}`, { body: roles })).status).toBe(200);
    expect((await detail()).roleAttributes).toEqual(['cached-role']);

    const added = await api.post('/enrollments', { body: { identityId: user.id, method: 'ott' } });
    expect(added.status).toBe(201);
    expect(Object.keys((await detail()).enrollment)).toEqual(['ott']);
    expect((await api.delete(`/enrollments/${added.body.data.id}`)).status).toBe(200);
    expect((await detail()).enrollment).toEqual({});

    const updb = (await detail()).authenticators.updb.id;
    expect((await api.delete(`/authenticators/${updb}`)).status).toBe(200);
    expect((await detail()).authenticators).toEqual({});
  });
});
