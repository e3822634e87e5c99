import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { startAuthorization } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { totpCode } from '../helpers/totp.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import {
  bearer,
  createIdp,
  createPolicy,
  extJwtChallenge,
  extJwtHelpers,
  partialLogin,
  tokensFrom,
  totpQuery,
  type Idp,
  type TestUser,
} from './factor-fixtures.js';

const ENROLL = '/oidc/login/totp/enroll';
const HTML = { accept: 'text/html' };

describe('a new factor is bound only after every other owed factor (TOTP enrollment beside a secondary external JWT)', () => {
  let server: TestServer;
  let api: ManagementApi;
  let idp: Idp;
  let bothPolicy: string;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    idp = await createIdp(api, 'binding');
    bothPolicy = await createPolicy(api, 'binding-totp-and-ext-jwt', {
      secondary: { requireTotp: true, requireExtJwt: idp.id },
    });
  });
  afterAll(() => server.close());

  const extJwtQuery = () => ({
    typeId: 'EXT-JWT',
    provider: 'url',
    id: idp.id,
    httpUrl: null,
    clientId: null,
    scopes: [],
  });
  const start = (id: string, headers = {}) =>
    server.client.post(ENROLL, { body: { authRequestId: id }, headers });
  const verify = (id: string, code: string, headers = {}) =>
    server.client.post(`${ENROLL}/verify`, { body: { authRequestId: id, code }, headers });
  const abandon = (id: string, headers = {}) =>
    server.client.delete(ENROLL, { body: { authRequestId: id }, headers });
  const show = (id: string, headers = {}) => server.client.get(`${ENROLL}?authRequestID=${id}`, { headers });

  /** Password users of the policy without TOTP; their IdP JWTs name `ext-<name>`. */
  const { userOf: victim, jwtOf } = extJwtHelpers(() => ({ server, api, idp, policy: bothPolicy }));
  const totpRows = (user: TestUser) => server.app.knex('mfa_totp').where({ identity_id: user.id });

  function expectOwesExtJwtFirst(res: {
    status: number;
    body: { error: { code: string; message: string } };
    headerAll(n: string): string[];
  }) {
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_AUTH_REQUEST');
    expect(res.body.error.message).toContain('EXT-JWT');
    expect(res.body.error.message).toContain(extJwtChallenge('missing', idp.id, idp.issuer));
    expect(res.headerAll('www-authenticate')).toEqual([extJwtChallenge('missing', idp.id, idp.issuer)]);
  }

  test('a password alone cannot start, show, abandon or verify an enrollment; the owner enrolls later', async () => {
    const user = await victim('binding-password-only');
    const { started, response } = await partialLogin(server.client, user);
    const id = started.authRequestId;

    const started201 = await start(id);
    const json = await show(id);
    const html = await show(id, HTML);
    const abandoned = await abandon(id);
    const verified = await verify(id, '123456');
    const rowsAfter = await totpRows(user);
    const detail = await api.get(`/identities/${user.id}`);
    const owners = await partialLogin(server.client, user, bearer(await jwtOf(user)));
    const ownersStart = await start(owners.started.authRequestId);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ authQueries: [extJwtQuery(), totpQuery(false)] });
    for (const res of [started201, json, html, abandoned, verified]) expectOwesExtJwtFirst(res);
    expect(rowsAfter).toEqual([]);
    expect(detail.body.data.isMfaEnabled).toBe(false);
    expect(owners.response.body).toEqual({ authQueries: [totpQuery(false)] });
    expect(ownersStart.status).toBe(201);
  });

  test('the secondary JWT sent with the enrollment start counts: the enrollment starts and its verify completes the login', async () => {
    const user = await victim('binding-jwt-on-start');
    const { started } = await partialLogin(server.client, user);
    const id = started.authRequestId;
    const jwt = await jwtOf(user);

    const shown = await show(id, bearer(jwt));
    const enrollment = await start(id, bearer(jwt));
    const owed = await server.client.get(`/oidc/login/auth-queries?id=${id}`);
    const done = await verify(id, await totpCode(enrollment.body.provisioningUrl));
    const tokens = await tokensFrom(server.client, started, done);
    const detail = await api.get(`/identities/${user.id}`);

    expect(shown.status).toBe(200);
    expect(shown.body).toEqual({ authQueries: [totpQuery(false)] });
    expect(enrollment.status).toBe(201);
    expect(owed.body).toEqual({ authQueries: [totpQuery(false)] });
    expect(done.status).toBe(303);
    expect(payloadOf(tokens.access_token).amr).toEqual(['pwd', 'ext-jwt', 'otp', 'mfa']);
    expect(detail.body.data.isMfaEnabled).toBe(true);
  });

  test('a browser form login shows what the app must send instead of the enrollment, and its start is refused', async () => {
    const user = await victim('binding-browser');
    const authorization = await startAuthorization(server.client, { method: 'password' });
    const id = authorization.authRequestId;

    const login = await server.client.post('/oidc/login/username', {
      headers: HTML,
      form: { authRequestId: id, username: user.username, password: user.password },
    });
    const begun = await server.client.post(ENROLL, { headers: HTML, form: { authRequestId: id } });

    expect(login.status).toBe(200);
    expect(login.header('content-type')).toMatch(/^text\/html/);
    expect(login.text).toContain('More verification needed');
    expect(login.text).not.toContain(`action="${ENROLL}"`);
    expectOwesExtJwtFirst(begun);
    expect(await totpRows(user)).toEqual([]);
  });

  test('the legacy enrollment refuses a password-only session of such an identity (401, the secondary challenge)', async () => {
    const user = await victim('binding-legacy');
    const session = await server.client.post('/edge/client/v1/authenticate?method=password', {
      body: { username: user.username, password: user.password },
    });
    const headers = { 'svc-session': session.body.data.token as string };

    const alone = await server.client.post('/edge/client/v1/current-identity/mfa', { headers });
    const withJwt = await server.client.post('/edge/client/v1/current-identity/mfa', {
      headers: { ...headers, ...bearer(await jwtOf(user)) },
    });

    expect(alone.status).toBe(401);
    expect(alone.headerAll('www-authenticate')).toEqual([extJwtChallenge('missing', idp.id, idp.issuer)]);
    expect(withJwt.status).toBe(201);
  });
});
