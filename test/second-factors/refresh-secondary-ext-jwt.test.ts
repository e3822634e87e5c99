import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oc from 'openid-client';
import { pino } from 'pino';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { exchangeCode, followToCallback, refreshTokens, type TokenSet } from '../helpers/oidc-client.js';
import { statementsOf } from '../helpers/sql-statements.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { discoverClient, issuerOf, payloadOf } from '../oidc/oidc-fixtures.js';
import {
  bearer,
  createIdp,
  createPolicy,
  createUser,
  extJwtChallenge,
  extJwtHelpers,
  partialLogin,
  tokensFrom,
  type Idp,
} from './factor-fixtures.js';

const ME = '/edge/client/v1/current-identity';

describe('the refresh grant of an identity whose policy requires a secondary external JWT', () => {
  let server: TestServer;
  let api: ManagementApi;
  let idp: Idp;
  let policy: string;
  /** The server's log, for its audit events. */
  const logLines: string[] = [];
  const auditEventsOf = (requestId: string | undefined) =>
    logLines
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.audit === true && l.requestId === requestId);
  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (chunk: string) => void logLines.push(chunk) });
    server = await startTestServer({ logger });
    api = managementApi(server, await server.adminToken());
    idp = await createIdp(api, 'refresh-second');
    policy = await createPolicy(api, 'refresh-secondary-ext-jwt', { secondary: { requireExtJwt: idp.id } });
  });
  afterAll(() => server.close());

  const { userOf, jwtOf, loggedIn } = extJwtHelpers(() => ({ server, api, idp, policy }));

  const refreshWith = (refreshToken: string, headers: Record<string, string> = {}) =>
    server.client.post('/oidc/token', {
      form: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: 'svc' },
      headers,
    });

  /** openid-client set up as docs/integrating.md shows: the JWT goes to the token endpoint. */
  async function refreshWithOpenidClient(refreshToken: string, jwt: string) {
    const { config, close } = await discoverClient(server, issuerOf(server));
    const trustingFetch = config[oc.customFetch]!;
    const { token_endpoint } = config.serverMetadata();
    config[oc.customFetch] = (url, options) =>
      url === token_endpoint
        ? trustingFetch(url, { ...options, headers: { ...options.headers, authorization: `Bearer ${jwt}` } })
        : trustingFetch(url, options);
    try {
      return await oc.refreshTokenGrant(config, refreshToken);
    } finally {
      await close();
    }
  }

  test('without the JWT: 400 invalid_grant with the missing challenge; the same refresh token then works with it', async () => {
    const { user, jwt, tokens } = await loggedIn('refresh-missing');

    const refused = await refreshTokens(server.client, tokens.refresh_token!);
    const refreshed = await refreshWithOpenidClient(tokens.refresh_token!, jwt);
    const call = await server.client.get(ME, { headers: bearer(refreshed.access_token, jwt) });

    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: 'invalid_grant', error_description: expect.any(String) });
    expect(refused.headerAll('www-authenticate')).toEqual([extJwtChallenge('missing', idp.id, idp.issuer)]);
    expect(refreshed.refresh_token).toBeDefined();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.claims()!.sub).toBe(user.id);
    expect(payloadOf(refreshed.access_token).z_asid).toBe(payloadOf(tokens.access_token).z_asid);
    expect(call.status).toBe(200);
  });

  test('a refused refresh and an accepted one are audited as the secondary JWT of a login is', async () => {
    const { user, jwt, tokens } = await loggedIn('refresh-audited');
    const asid = payloadOf(tokens.access_token).z_asid;

    const refused = await refreshTokens(server.client, tokens.refresh_token!);
    const accepted = await refreshWith(tokens.refresh_token!, bearer(jwt));

    expect(refused.status).toBe(400);
    expect(accepted.status).toBe(200);
    const common = { event: 'auth.second-factor', method: 'ext-jwt', identityId: user.id, signerId: idp.id };
    expect(auditEventsOf(refused.header('request-id'))).toEqual([
      expect.objectContaining({
        ...common,
        outcome: 'failure',
        reason: 'no-valid-jwt-of-the-signer',
        grantType: 'refresh_token',
        sessionId: asid,
      }),
    ]);
    expect(auditEventsOf(accepted.header('request-id'))).toEqual([
      expect.objectContaining({ ...common, outcome: 'success', sessionId: asid }),
    ]);
  });

  test("another identity's JWT, an expired one, or one of another signer is refused; the refresh token stays usable", async () => {
    const { user, jwt, tokens } = await loggedIn('refresh-wrong-jwt');
    const someoneElse = await loggedIn('refresh-someone-else');
    const otherIdp = await createIdp(api, 'refresh-other');
    const forged = await otherIdp.jwt(`ext-${user.name}`, { iss: idp.issuer });

    const theirs = await refreshWith(tokens.refresh_token!, bearer(someoneElse.jwt));
    const expired = await refreshWith(tokens.refresh_token!, bearer(await jwtOf(user, { expiresIn: -120 })));
    const wrongKey = await refreshWith(tokens.refresh_token!, bearer(forged));
    const own = await refreshWith(tokens.refresh_token!, bearer(jwt));

    for (const res of [theirs, wrongKey]) {
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_grant');
      expect(res.headerAll('www-authenticate')).toEqual([extJwtChallenge('invalid', idp.id, idp.issuer)]);
    }
    expect(expired.status).toBe(400);
    expect(expired.headerAll('www-authenticate')).toEqual([extJwtChallenge('expired', idp.id, idp.issuer)]);
    expect(own.status).toBe(200);
    expect(payloadOf(own.body.access_token).sub).toBe(user.id);
  });

  test('the JWT may come beside other bearer values, in one header or two', async () => {
    const { jwt, tokens } = await loggedIn('refresh-two-headers');

    const first = await refreshWith(tokens.refresh_token!, bearer(tokens.access_token, jwt));
    const second = await server.client.post('/oidc/token', {
      form: { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: 'svc' },
      headers: { authorization: [`Bearer ${jwt}`, `Bearer ${tokens.access_token}`] },
    });

    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
  });

  test('a rotated refresh token presented again, even without the JWT, still revokes the whole grant', async () => {
    const { jwt, tokens } = await loggedIn('refresh-replay');
    const rotated = await refreshWith(tokens.refresh_token!, bearer(jwt));

    const replay = await refreshTokens(server.client, tokens.refresh_token!);
    const newest = await refreshWith(rotated.body.refresh_token, bearer(jwt));

    expect(rotated.status).toBe(200);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    expect(newest.status).toBe(400);
    expect(newest.body.error).toBe('invalid_grant');
  });

  test('the code exchange needs no JWT (the login verified it), and one sent along does no harm', async () => {
    const user = await userOf('code-exchange');
    const jwt = await jwtOf(user);
    const login = async () => {
      const { started, response } = await partialLogin(server.client, user, bearer(jwt));
      return { started, callback: await followToCallback(server.client, response, started.redirectUri) };
    };
    const plain = await login();
    const withJwt = await login();

    const without = await exchangeCode(server.client, {
      code: plain.callback.code,
      verifier: plain.started.pkce.verifier,
    });
    const alongside = await server.client.post('/oidc/token', {
      form: {
        grant_type: 'authorization_code',
        code: withJwt.callback.code,
        code_verifier: withJwt.started.pkce.verifier,
        redirect_uri: withJwt.started.redirectUri,
        client_id: 'svc',
      },
      headers: bearer(jwt),
    });

    for (const res of [without, alongside]) {
      expect(res.status).toBe(200);
      expect(payloadOf((res.body as TokenSet).access_token).amr).toEqual(['pwd', 'ext-jwt', 'mfa']);
    }
  });

  test('identities whose policy requires no secondary JWT refresh without one, also with a stray bearer value', async () => {
    const user = await createUser(server, 'refresh-no-policy');
    const { started, response } = await partialLogin(server.client, user);
    const tokens = await tokensFrom(server.client, started, response);

    const plain = await refreshTokens(server.client, tokens.refresh_token!);
    const stray = await refreshWith(plain.body.refresh_token, bearer(plain.body.access_token));

    expect(plain.status).toBe(200);
    expect(stray.status).toBe(200);
  });

  test('the check adds no statement: the policy comes with the one read of the refresh token', async () => {
    const { jwt, tokens } = await loggedIn('refresh-statements');

    const { result, sql } = await statementsOf(server.app.knex, () =>
      refreshWith(tokens.refresh_token!, bearer(jwt)),
    );

    expect(result.status).toBe(200);
    // The signer itself comes from the in-memory signer cache shared with the Edge APIs, which
    // rereads it at most once a second.
    const own = sql.filter((s) => !s.includes('external_jwt_signers'));
    expect(own).toHaveLength(3);
    expect(own[1]).toMatch(/^WITH consumed AS \(\s*UPDATE oidc_payloads SET consumed_at/);
    expect(own[2]).toMatch(/insert into "oidc_payloads"/);
    // Its `auth.second-factor` event is stored by the consume, in the same statement.
    expect(own[1]).toMatch(/insert into "audit_events"/);
    const stored = await server.app
      .knex('audit_events')
      .where({ event: 'auth.second-factor', request_id: result.header('request-id') });
    expect(stored).toHaveLength(1);
    expect(stored[0].details).toMatchObject({ method: 'ext-jwt', grantType: 'refresh_token' });
  });
});
