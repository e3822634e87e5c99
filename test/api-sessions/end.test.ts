import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { importJWK, SignJWT } from 'jose';
import { capturedAuditLog } from '../helpers/audit-log.js';
import type { TestResponse } from '../helpers/https-client.js';
import { passwordLogin as oidcPasswordLogin, refreshTokens, type TokenSet } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  enrolledUpdbUser,
  managementApi,
  passwordLogin,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import { currentSigningJwk, payloadOf } from '../oidc/oidc-fixtures.js';

/**
 * Ending API sessions as a user notices it: an admin ends one session or all of an identity's, an
 * identity ends one of its own, a client revokes an access token (RFC 7009). Whatever the way,
 * the session's legacy token and access tokens are refused at once, and its refresh token no
 * longer refreshes; the audit trail names why.
 */
describe('ending API sessions', () => {
  const log = capturedAuditLog();
  let server: TestServer;
  let api: ManagementApi;
  let adminId: string;

  const auditEvents = log.events;
  /** The `session.ended` events of the request that got `res`. */
  const endedBy = (res: TestResponse) =>
    auditEvents().filter((e) => e.event === 'session.ended' && e.requestId === res.header('request-id'));

  beforeAll(async () => {
    server = await startTestServer({ logger: log.logger });
    const token = await server.adminToken();
    api = managementApi(server, token);
    adminId = (await api.get('/current-identity')).body.data.id;
  }, 180_000);
  afterAll(() => server?.close());

  const legacy = (token: string) => ({ headers: { 'svc-session': token } });
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
  const meWithSession = async (token: string) =>
    (await server.client.get(`${CLIENT}/current-identity`, legacy(token))).status;
  const meWithAccessToken = async (token: string) =>
    (await server.client.get(`${CLIENT}/current-identity`, bearer(token))).status;

  /** A second legacy session of a user: its id and token. */
  async function legacySession(username: string, password: string) {
    const res = await passwordLogin(server, username, password);
    expect(res.status).toBe(200);
    return { id: res.body.data.id as string, token: res.body.data.token as string };
  }

  /** An OIDC login of a user: its tokens and API session id (`z_asid`). */
  async function oidcSession(username: string, password: string) {
    const { tokens } = await oidcPasswordLogin(server.client, username, password);
    return { id: payloadOf(tokens.access_token).z_asid as string, tokens };
  }

  /** Both tokens of an OIDC login stopped working: the access token 401, the refresh `invalid_grant`. */
  async function expectOidcEnded(tokens: TokenSet) {
    expect(await meWithAccessToken(tokens.access_token)).toBe(401);
    const refresh = await refreshTokens(server.client, tokens.refresh_token!);
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
  }

  const grantRowsOf = async (identityId: string) =>
    Number(
      (
        await server.app
          .knex('oidc_payloads')
          .where({ account_id: identityId })
          .whereIn('model', ['Grant', 'SvcLogin', 'RefreshToken', 'AuthorizationCode'])
          .count({ n: '*' })
      )[0]!.n,
    );

  test('an admin ends a legacy session: its token is refused, and the ending is audited', async () => {
    const user = await enrolledUpdbUser(server, api, 'end-legacy');
    const session = await legacySession(user.username, user.password);
    expect(await meWithSession(session.token)).toBe(200);

    const ended = await api.delete(`/api-sessions/${session.id}`);

    expect(ended.status).toBe(200);
    expect(ended.body).toEqual({ data: {}, meta: {} });
    expect(await meWithSession(session.token)).toBe(401);
    // The user's other session is untouched.
    expect(await meWithSession(user.token)).toBe(200);
    expect(endedBy(ended)).toEqual([
      expect.objectContaining({
        sessionId: session.id,
        kind: 'legacy',
        identityId: user.id,
        actorId: adminId,
        cause: 'admin',
      }),
    ]);
    expect((await api.delete(`/api-sessions/${session.id}`)).status).toBe(404);
    expect((await api.delete('/api-sessions/no-such-session')).status).toBe(404);
  });

  test('an admin ends an OIDC session: its access token gets 401, its refresh token invalid_grant', async () => {
    const user = await enrolledUpdbUser(server, api, 'end-oidc');
    const session = await oidcSession(user.username, user.password);
    expect(await meWithAccessToken(session.tokens.access_token)).toBe(200);
    expect(await grantRowsOf(user.id)).toBeGreaterThan(0);

    const ended = await api.delete(`/api-sessions/${session.id}`);

    expect(ended.status).toBe(200);
    await expectOidcEnded(session.tokens);
    // The grant goes with its session: nothing of it is left to redeem.
    expect(await grantRowsOf(user.id)).toBe(0);
    expect(endedBy(ended)).toEqual([
      expect.objectContaining({ sessionId: session.id, kind: 'oidc', identityId: user.id, cause: 'admin' }),
    ]);
    expect(auditEvents()).toContainEqual(
      expect.objectContaining({ event: 'revocation.published', sessionId: session.id, cause: 'admin' }),
    );
  });

  test("an admin ends every session of an identity, and no one else's, in one request", async () => {
    const user = await enrolledUpdbUser(server, api, 'end-all');
    const other = await enrolledUpdbUser(server, api, 'end-all-other');
    const second = await legacySession(user.username, user.password);
    const viaOidc = await oidcSession(user.username, user.password);
    const othersOidc = await oidcSession(other.username, other.password);

    const ended = await api.delete(`/identities/${user.id}/api-sessions`);

    expect(ended.status).toBe(200);
    expect(ended.body).toEqual({ data: {}, meta: {} });
    expect(await meWithSession(user.token)).toBe(401);
    expect(await meWithSession(second.token)).toBe(401);
    await expectOidcEnded(viaOidc.tokens);
    expect(await meWithSession(other.token)).toBe(200);
    expect(await meWithAccessToken(othersOidc.tokens.access_token)).toBe(200);
    const events = endedBy(ended);
    expect(events).toHaveLength(3);
    expect(events.map((e) => e.sessionId)).toEqual(expect.arrayContaining([viaOidc.id, second.id]));
    for (const e of events)
      expect(e).toMatchObject({ identityId: user.id, cause: 'admin', actorId: adminId });

    // The identity itself stays: it logs in again; nothing is left to end, which is fine.
    expect((await api.delete(`/identities/${user.id}/api-sessions`)).status).toBe(200);
    await legacySession(user.username, user.password);
    expect((await api.delete('/identities/no-such-identity/api-sessions')).status).toBe(404);
  });

  test('an identity ends one of its own sessions; the id of another identity is 404 like an unknown one', async () => {
    const user = await enrolledUpdbUser(server, api, 'end-self');
    const other = await enrolledUpdbUser(server, api, 'end-self-other');
    const phone = await oidcSession(user.username, user.password);
    const othersSession = await legacySession(other.username, other.password);
    const self = (path: string, token: string) =>
      server.client.delete(`${CLIENT}/current-identity/api-sessions/${path}`, legacy(token));

    const ended = await self(phone.id, user.token);

    expect(ended.status).toBe(200);
    expect(ended.body).toEqual({ data: {}, meta: {} });
    await expectOidcEnded(phone.tokens);
    expect(await meWithSession(user.token)).toBe(200);
    expect(endedBy(ended)).toEqual([
      expect.objectContaining({ sessionId: phone.id, kind: 'oidc', identityId: user.id, cause: 'self' }),
    ]);

    const foreign = await self(othersSession.id, user.token);
    const unknown = await self('no-such-session', user.token);
    expect(foreign.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(foreign.body.error.code).toBe(unknown.body.error.code);
    expect(foreign.body.error.message).toBe(unknown.body.error.message);
    expect(await meWithSession(othersSession.token)).toBe(200);

    // With a bearer token, and the calling session itself.
    const laptop = await oidcSession(user.username, user.password);
    const byBearer = await server.client.delete(
      `${CLIENT}/current-identity/api-sessions/${laptop.id}`,
      bearer(laptop.tokens.access_token),
    );
    expect(byBearer.status).toBe(200);
    await expectOidcEnded(laptop.tokens);
    const own = await legacySession(user.username, user.password);
    expect((await self(own.id, own.token)).status).toBe(200);
    expect(await meWithSession(own.token)).toBe(401);
  });

  test('disabling or deleting an identity audits each session it ends, with that cause', async () => {
    const user = await enrolledUpdbUser(server, api, 'end-by-identity');
    const first = await legacySession(user.username, user.password);
    const viaOidc = await oidcSession(user.username, user.password);
    const disabled = await api.post(`/identities/${user.id}/disable`, { body: { durationMinutes: 5 } });
    expect(disabled.status).toBe(200);
    expect(endedBy(disabled)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ sessionId: first.id, kind: 'legacy', cause: 'disabled' }),
        expect.objectContaining({ sessionId: viaOidc.id, kind: 'oidc', cause: 'disabled' }),
      ]),
    );
    expect(endedBy(disabled)).toHaveLength(3);

    const enabled = await api.post(`/identities/${user.id}/enable`);
    expect(enabled.status).toBe(200);
    const again = await legacySession(user.username, user.password);
    const deleted = await api.delete(`/identities/${user.id}`);
    expect(deleted.status).toBe(200);
    expect(endedBy(deleted)).toEqual([
      expect.objectContaining({ sessionId: again.id, kind: 'legacy', cause: 'deleted', identityId: user.id }),
    ]);
  });

  test('a non-admin may not end sessions through the management API (403)', async () => {
    const user = await enrolledUpdbUser(server, api, 'end-non-admin');
    const viaOidc = await oidcSession(user.username, user.password);
    const asUser = managementApi(server, user.token);
    for (const path of [`/api-sessions/${viaOidc.id}`, `/identities/${user.id}/api-sessions`]) {
      expect((await asUser.delete(path)).status).toBe(403);
      const withBearer = await server.client.delete(
        `/edge/management/v1${path}`,
        bearer(viaOidc.tokens.access_token),
      );
      expect(withBearer.status).toBe(403);
    }
    expect(await meWithAccessToken(viaOidc.tokens.access_token)).toBe(200);
  });

  describe('RFC 7009 revocation of an access token at /oidc/revoke', () => {
    const revoke = (token: string, extra: Record<string, string> = {}) =>
      server.client.post('/oidc/revoke', { form: { token, client_id: 'svc', ...extra } });

    test('ends its whole API session, refresh token included', async () => {
      const user = await enrolledUpdbUser(server, api, 'revoke-access');
      const session = await oidcSession(user.username, user.password);
      const sibling = await oidcSession(user.username, user.password);

      const res = await revoke(session.tokens.access_token);

      expect(res.status).toBe(200);
      expect(res.text).toBe('');
      await expectOidcEnded(session.tokens);
      expect(await meWithAccessToken(sibling.tokens.access_token)).toBe(200);
      expect(endedBy(res)).toEqual([
        expect.objectContaining({
          sessionId: session.id,
          kind: 'oidc',
          identityId: user.id,
          cause: 'revoked',
        }),
      ]);

      // Again: nothing is left to end, and nothing more is recorded.
      const again = await revoke(session.tokens.access_token, { token_type_hint: 'access_token' });
      expect(again.status).toBe(200);
      expect(endedBy(again)).toEqual([]);
    });

    test('with any token_type_hint', async () => {
      const user = await enrolledUpdbUser(server, api, 'revoke-hinted');
      for (const hint of ['access_token', 'refresh_token']) {
        const session = await oidcSession(user.username, user.password);
        expect((await revoke(session.tokens.access_token, { token_type_hint: hint })).status).toBe(200);
        await expectOidcEnded(session.tokens);
      }
    });

    test('unknown, garbage, expired or foreign tokens get 200 and end nothing', async () => {
      const user = await enrolledUpdbUser(server, api, 'revoke-garbage');
      const session = await oidcSession(user.username, user.password);
      const claims = payloadOf(session.tokens.access_token);
      const jwk = await currentSigningJwk(server);
      const key = await importJWK(jwk as never, 'RS256');
      const kid = jwk.kid as string;
      const now = Math.floor(Date.now() / 1000);
      const mint = (payload: Record<string, unknown>) =>
        new SignJWT({ ...claims, ...payload })
          .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid })
          .sign(key);
      const expired = await mint({ iat: now - 7200, exp: now - 3600 });
      const foreignIssuer = await mint({ iss: 'https://elsewhere.example/oidc' });
      const otherClient = await mint({ client_id: 'someone-else' });
      const forged = `${session.tokens.access_token.slice(0, -8)}AAAAAAAA`;

      for (const token of [
        'garbage',
        'no-such-refresh-token-0123456789',
        'a.b.c',
        'eyJhbGciOiJub25lIn0.e30.',
        forged,
        expired,
        foreignIssuer,
        otherClient,
        session.tokens.id_token,
      ]) {
        const res = await revoke(token);
        expect({ token, status: res.status }).toEqual({ token, status: 200 });
        expect(endedBy(res)).toEqual([]);
      }
      expect(await meWithAccessToken(session.tokens.access_token)).toBe(200);
    });

    test('a refresh token is still revoked by the provider, ending its session', async () => {
      const user = await enrolledUpdbUser(server, api, 'revoke-refresh');
      const session = await oidcSession(user.username, user.password);
      const res = await revoke(session.tokens.refresh_token!, { token_type_hint: 'refresh_token' });
      expect(res.status).toBe(200);
      await expectOidcEnded(session.tokens);
    });

    test('without client authentication the token is left alone', async () => {
      const user = await enrolledUpdbUser(server, api, 'revoke-no-client');
      const session = await oidcSession(user.username, user.password);
      const res = await server.client.post('/oidc/revoke', { form: { token: session.tokens.access_token } });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.body.error).toEqual(expect.stringMatching(/^invalid_(client|request)$/));
      expect(await meWithAccessToken(session.tokens.access_token)).toBe(200);
    });
  });

  test('a logout is audited with its cause as before', async () => {
    const user = await enrolledUpdbUser(server, api, 'end-logout');
    const out = await server.client.delete(`${CLIENT}/current-api-session`, legacy(user.token));
    expect(out.status).toBe(200);
    expect(endedBy(out)).toEqual([
      expect.objectContaining({ kind: 'legacy', identityId: user.id, cause: 'logout' }),
    ]);
    const viaOidc = await oidcSession(user.username, user.password);
    const oidcOut = await server.client.delete(
      `${CLIENT}/current-api-session`,
      bearer(viaOidc.tokens.access_token),
    );
    expect(oidcOut.status).toBe(200);
    expect(endedBy(oidcOut)).toEqual([
      expect.objectContaining({ sessionId: viaOidc.id, kind: 'oidc', identityId: user.id, cause: 'logout' }),
    ]);
    expect(auditEvents()).toContainEqual(
      expect.objectContaining({
        event: 'revocation.published',
        sessionId: viaOidc.id,
        cause: 'session-ended',
      }),
    );
  });
});
