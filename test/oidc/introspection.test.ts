import { afterAll, afterEach, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { generateKeyPair, importJWK, SignJWT } from 'jose';
import { randomBytes } from 'node:crypto';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { passwordLogin, refreshTokens, type TokenSet } from '../helpers/oidc-client.js';
import { clockAt, SHORT_OIDC_LIFETIMES, startClock } from '../helpers/movable-clock.js';
import { statementsOf } from '../helpers/sql-statements.js';
import { enrolledUpdbUser, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { createIdp, createPolicy, extJwtHelpers, type Idp } from '../second-factors/factor-fixtures.js';
import { currentSigningJwk, issuerOf, payloadOf } from './oidc-fixtures.js';

const PATH = '/oidc/token/introspection';
const INACTIVE = { active: false };

describe('token introspection (RFC 7662) at /oidc/token/introspection', () => {
  let server: TestServer;
  let api: ManagementApi;
  let adminAccess: string;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    adminAccess = (await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD)).tokens.access_token;
  });
  afterAll(() => server.close());

  const introspect = (token: string, caller = adminAccess, extra: Record<string, string> = {}) =>
    server.client.post(PATH, { form: { token, ...extra }, headers: { authorization: `Bearer ${caller}` } });

  /** A plain identity logged in through OIDC. */
  async function userWithTokens(name: string): Promise<{ id: string; tokens: TokenSet }> {
    const user = await enrolledUpdbUser(server, api, name);
    const { tokens } = await passwordLogin(server.client, user.username, user.password);
    return { id: user.id, tokens };
  }

  test('discovery names the endpoint', async () => {
    const discovery = await server.client.get('/.well-known/openid-configuration');

    expect(discovery.body.introspection_endpoint).toBe(`${issuerOf(server)}/token/introspection`);
  });

  test('a live access token: its claims as oidc-provider answers them, token_type Bearer and jti', async () => {
    const { id, tokens } = await userWithTokens('intro-access');
    const claims = payloadOf(tokens.access_token);

    const res = await introspect(tokens.access_token, adminAccess, { token_type_hint: 'access_token' });

    expect(res.status).toBe(200);
    expect(res.header('cache-control')).toBe('no-store');
    expect(res.body).toEqual({
      active: true,
      sub: id,
      client_id: 'svc',
      scope: 'openid offline_access',
      exp: claims.exp,
      iat: claims.iat,
      iss: issuerOf(server),
      aud: claims.aud,
      z_asid: claims.z_asid,
      token_type: 'Bearer',
      jti: claims.jti,
    });
  });

  test('a live refresh token: the same members without token_type and jti; a rotated one is inactive', async () => {
    const { id, tokens } = await userWithTokens('intro-refresh');
    const claims = payloadOf(tokens.access_token);

    const live = await introspect(tokens.refresh_token!, adminAccess, { token_type_hint: 'access_token' });
    const rotated = await refreshTokens(server.client, tokens.refresh_token!);
    const old = await introspect(tokens.refresh_token!);
    const next = await introspect(rotated.body.refresh_token);

    expect(live.status).toBe(200);
    expect(live.body).toEqual({
      active: true,
      sub: id,
      client_id: 'svc',
      scope: 'openid offline_access',
      exp: expect.any(Number),
      iat: expect.any(Number),
      iss: issuerOf(server),
      z_asid: claims.z_asid,
    });
    expect(live.body.exp).toBeGreaterThan(claims.exp);
    expect(old.body).toEqual(INACTIVE);
    expect(next.body).toMatchObject({ active: true, sub: id, z_asid: claims.z_asid });
  });

  test('an access token is answered from memory (no SQL), a refresh token with one statement', async () => {
    const { tokens } = await userWithTokens('intro-statements');
    await introspect(tokens.access_token); // the caller and the subject are in memory from here on

    const access = await statementsOf(server.app.knex, () => introspect(tokens.access_token));
    const refresh = await statementsOf(server.app.knex, () => introspect(tokens.refresh_token!));

    expect(access.result.body.active).toBe(true);
    expect(access.sql).toEqual([]);
    expect(refresh.result.body.active).toBe(true);
    expect(refresh.sql).toHaveLength(1);
  });

  test('after logout (end_session) both tokens of the login are inactive', async () => {
    const { tokens } = await userWithTokens('intro-logout');
    const before = await introspect(tokens.access_token);

    const logout = await server.client.post('/oidc/end_session', {
      form: { id_token_hint: tokens.id_token },
    });
    const access = await introspect(tokens.access_token);
    const refresh = await introspect(tokens.refresh_token!);

    expect(before.body.active).toBe(true);
    expect(logout.status).toBe(200);
    expect(access.body).toEqual(INACTIVE);
    expect(refresh.body).toEqual(INACTIVE);
  });

  test('a disabled identity and a deleted one: their tokens are inactive', async () => {
    const disabled = await userWithTokens('intro-disabled');
    const deleted = await userWithTokens('intro-deleted');

    expect((await api.post(`/identities/${disabled.id}/disable`, { body: {} })).status).toBe(200);
    expect((await api.delete(`/identities/${deleted.id}`)).status).toBe(200);
    const answers = await Promise.all(
      [disabled, deleted]
        .flatMap(({ tokens }) => [tokens.access_token, tokens.refresh_token!])
        .map((t) => introspect(t)),
    );

    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual(INACTIVE);
    }
  });

  test('garbage, unknown, ID tokens and another issuer’s tokens answer exactly {active: false}', async () => {
    const { tokens } = await userWithTokens('intro-garbage');
    const claims = payloadOf(tokens.access_token);
    const { privateKey } = await generateKeyPair('RS256');
    const foreign = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'elsewhere' })
      .sign(privateKey);
    // Signed with our own key, for an issuer that is not ours.
    const jwk = await currentSigningJwk(server);
    const otherIssuer = await new SignJWT({ ...claims, iss: 'https://elsewhere.example/oidc' })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: jwk.kid as string })
      .sign(await importJWK(jwk, 'RS256'));
    const [header, payload] = tokens.access_token.split('.');
    const forged = `${header}.${payload}.${Buffer.from('not the signature').toString('base64url')}`;

    const answers = await Promise.all(
      [
        'garbage',
        'a.b.c',
        '....',
        randomBytes(32).toString('base64url'), // shaped like a refresh token, names none
        'x'.repeat(20_000),
        '\u00e9\u00e9\u00e9',
        tokens.id_token,
        forged,
        foreign,
        otherIssuer,
      ].map((t) => introspect(t)),
    );

    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.text).toBe('{"active":false}');
    }
  });

  test('a caller without a token gets the bare challenge; a bad token 401 invalid_token; no CORS', async () => {
    const none = await server.client.post(PATH, {
      form: { token: adminAccess },
      headers: { origin: 'https://rs.example' },
    });
    const bad = await introspect(adminAccess, 'not-a-token');

    expect(none.status).toBe(401);
    expect(none.headerAll('www-authenticate')).toEqual(['Bearer realm="svc-oidc"']);
    expect(none.header('access-control-allow-origin')).toBeUndefined();
    expect(bad.status).toBe(401);
    expect(bad.headerAll('www-authenticate')).toEqual([
      'Bearer realm="svc-oidc", error="invalid_token", error_description="token is invalid"',
    ]);
    expect(bad.body).toEqual({ error: 'invalid_token', error_description: 'token is invalid' });
  });

  test('a plain identity is refused 403 until an admin grants token-introspection, and again after removal', async () => {
    const rs = await enrolledUpdbUser(server, api, 'intro-resource-server');
    const { tokens } = await passwordLogin(server.client, rs.username, rs.password);
    const target = adminAccess;

    const refused = await introspect(target, tokens.access_token);
    const selfGrant = await server.client.patch(`/edge/management/v1/identities/${rs.id}`, {
      body: { permissions: ['token-introspection'] },
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    const granted = await api.patch(`/identities/${rs.id}`, {
      body: { permissions: ['token-introspection'] },
    });
    const detail = await api.get(`/identities/${rs.id}`);
    const allowed = await introspect(target, tokens.access_token);
    const removed = await api.patch(`/identities/${rs.id}`, { body: { permissions: [] } });
    const refusedAgain = await introspect(target, tokens.access_token);

    expect(refused.status).toBe(403);
    expect(refused.header('www-authenticate')).toMatch(
      /^Bearer realm="svc-oidc", error="insufficient_scope", error_description="[^"]+"$/,
    );
    expect(refused.body).toEqual({ error: 'insufficient_scope', error_description: expect.any(String) });
    expect(selfGrant.status).toBe(403);
    expect(granted.status).toBe(200);
    expect(detail.body.data.permissions).toEqual(['token-introspection']);
    // The grant changes no token: the caller's token from before it works at once.
    expect(allowed.status).toBe(200);
    expect(allowed.body).toMatchObject({ active: true, sub: payloadOf(target).sub });
    expect(removed.status).toBe(200);
    expect(refusedAgain.status).toBe(403);
  });

  test('permissions: unknown names are refused, create sets them, PUT without them clears them', async () => {
    const unknown = await api.post('/identities', {
      body: { name: 'intro-unknown-perm', isAdmin: false, permissions: ['everything'] },
    });
    const created = await api.post('/identities', {
      body: { name: 'intro-created-perm', isAdmin: false, permissions: ['token-introspection'] },
    });
    const id = created.body.data.id as string;
    const shown = await api.get(`/identities/${id}`);
    const replaced = await api.put(`/identities/${id}`, {
      body: { name: 'intro-created-perm', isAdmin: false },
    });
    const after = await api.get(`/identities/${id}`);

    expect(unknown.status).toBe(400);
    expect(unknown.body.error.code).toBe('COULD_NOT_VALIDATE');
    expect(created.status).toBe(201);
    expect(shown.body.data.permissions).toEqual(['token-introspection']);
    expect(replaced.status).toBe(200);
    expect(after.body.data.permissions).toEqual([]);
  });

  test('wrong method 405, a JSON body 415 invalid_request, no token 400 invalid_request', async () => {
    const auth = { authorization: `Bearer ${adminAccess}` };
    const get = await server.client.get(`${PATH}?token=x`, { headers: auth });
    const json = await server.client.post(PATH, { body: { token: adminAccess }, headers: auth });
    const empty = await server.client.post(PATH, { form: {}, headers: auth });
    const twice = await server.client.post(PATH, { form: { token: ['a', 'b'] }, headers: auth });

    expect(get.status).toBe(405);
    expect(get.header('allow')).toBe('POST');
    expect(json.status).toBe(415);
    expect(json.body).toMatchObject({ error: 'invalid_request' });
    expect(empty.status).toBe(400);
    expect(empty.body).toEqual({ error: 'invalid_request', error_description: 'token is required' });
    expect(twice.status).toBe(400);
    expect(twice.body.error).toBe('invalid_request');
  });

  describe('an identity whose policy requires a secondary external JWT', () => {
    let idp: Idp;
    let policy: string;
    beforeAll(async () => {
      idp = await createIdp(api, 'intro-second');
      policy = await createPolicy(api, 'intro-secondary', { secondary: { requireExtJwt: idp.id } });
    });

    test('both its tokens name the signer in svc_secondary_ext_jwt', async () => {
      const { loggedIn } = extJwtHelpers(() => ({ server, api, idp, policy }));
      const { tokens } = await loggedIn('intro-ext-jwt');

      const access = await introspect(tokens.access_token);
      const refresh = await introspect(tokens.refresh_token!);

      expect(access.body).toMatchObject({ active: true, svc_secondary_ext_jwt: idp.id });
      expect(refresh.body).toMatchObject({ active: true, svc_secondary_ext_jwt: idp.id });
    });
  });
});

describe('token introspection: expiry and its own rate budget', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      env: {
        ...SHORT_OIDC_LIFETIMES,
        SVC_RATE_LIMITS_ENABLED: 'true',
        SVC_RATE_LIMITS_PER_SECOND: '1',
        SVC_RATE_LIMITS_BURST: '200',
        SVC_RATE_LIMITS_INTROSPECTION_PER_SECOND: '1',
        SVC_RATE_LIMITS_INTROSPECTION_BURST: '3',
      },
    });
  });
  afterEach(() => {
    jest.useRealTimers();
  });
  afterAll(() => server.close());

  const introspect = (token: string, caller: string) =>
    server.client.post(PATH, { form: { token }, headers: { authorization: `Bearer ${caller}` } });
  const adminLogin = async () => (await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD)).tokens;

  test('an expired access token and an expired refresh token are inactive', async () => {
    startClock();
    const tokens = await adminLogin();

    clockAt(6 * 60);
    const access = await introspect(tokens.access_token, (await adminLogin()).access_token);
    clockAt(61 * 60);
    const refresh = await introspect(tokens.refresh_token!, (await adminLogin()).access_token);

    expect(access.body).toEqual(INACTIVE);
    expect(refresh.body).toEqual(INACTIVE);
  });

  test('each caller has its own budget, apart from the logins of its address', async () => {
    const api = managementApi(server, await server.adminToken());
    const rs = await enrolledUpdbUser(server, api, 'intro-busy-rs', { permissions: ['token-introspection'] });
    const caller = (await passwordLogin(server.client, rs.username, rs.password)).tokens.access_token;
    const tokens = await adminLogin();

    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await introspect(tokens.refresh_token!, caller));
    const otherCaller = await introspect(tokens.refresh_token!, tokens.access_token);
    const login = await adminLogin();

    expect(answers.slice(0, 3).map((r) => r.body.active)).toEqual([true, true, true]);
    expect(answers[3]!.status).toBe(429);
    expect(answers[3]!.body.error).toBe('temporarily_unavailable');
    expect(Number(answers[3]!.header('retry-after'))).toBeGreaterThan(0);
    expect(otherCaller.body.active).toBe(true);
    expect(login.access_token).toEqual(expect.any(String));
  });
});
