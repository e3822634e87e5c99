import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import type { HttpsClient } from '../helpers/https-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  exchangeCode,
  followToCallback,
  passwordLogin,
  refreshTokens,
  startAuthorization,
  submitLogin,
} from '../helpers/oidc-client.js';
import { issuerOf } from './oidc-fixtures.js';

const admin = { username: ADMIN_USERNAME, password: ADMIN_PASSWORD };

/** A code of a login through `client`'s issuer, not yet exchanged. */
async function codeFrom(client: HttpsClient) {
  const started = await startAuthorization(client, { method: 'password' });
  const login = await submitLogin(client, started, { body: admin });
  const callback = await followToCallback(client, login);
  return { code: callback.code, verifier: started.pkce.verifier, iss: callback.iss };
}

/**
 * One listener, two issuers (`https://127.0.0.1:P/oidc` and `https://localhost:P/oidc`): a code
 * or refresh token is redeemed only at the issuer of its login (RFC 9700 §4.4), and revoked at
 * either.
 */
describe('codes and refresh tokens are bound to the issuer of their login', () => {
  let server: TestServer;
  let loopback: HttpsClient;
  let localhost: HttpsClient;
  beforeAll(async () => {
    server = await startTestServer();
    loopback = server.client;
    localhost = server.newClient({}, server.url.replace('127.0.0.1', 'localhost'));
  });
  afterAll(() => server.close());

  test('a code is refused at the other issuer with invalid_grant, and is still good at its own', async () => {
    const code = await codeFrom(localhost);
    expect(code.iss).toBe(issuerOf(server, 'localhost'));

    const elsewhere = await exchangeCode(loopback, code);
    const home = await exchangeCode(localhost, code);

    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error).toBe('invalid_grant');
    expect(home.status).toBe(200);
    expect(decodeJwt(home.body.id_token).iss).toBe(issuerOf(server, 'localhost'));
  });

  test('a refresh token is refused at the other issuer with invalid_grant, and is still good at its own', async () => {
    const { tokens } = await passwordLogin(loopback, admin.username, admin.password);

    const elsewhere = await refreshTokens(localhost, tokens.refresh_token!);
    const home = await refreshTokens(loopback, tokens.refresh_token!);

    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error).toBe('invalid_grant');
    expect(home.status).toBe(200);
    expect(decodeJwt(home.body.id_token).iss).toBe(issuerOf(server));
    expect(decodeJwt(home.body.access_token).iss).toBe(issuerOf(server));
  });

  test('a login stored without its issuer (before the upgrade) still refreshes, at either issuer', async () => {
    const { tokens } = await passwordLogin(loopback, admin.username, admin.password);
    const asid = decodeJwt(tokens.access_token).z_asid as string;
    const changed = await server.app
      .knex('oidc_payloads')
      .where({ model: 'SvcLogin', uid: asid })
      .update({ payload: server.app.knex.raw(`payload - 'issuer'`) });
    expect(changed).toBe(1);

    const first = await refreshTokens(localhost, tokens.refresh_token!);
    const second = await refreshTokens(loopback, first.body.refresh_token);

    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
  });

  test('/oidc/revoke revokes a refresh token of the other issuer, and its API session ends', async () => {
    const { tokens } = await passwordLogin(localhost, admin.username, admin.password);
    const bearer = { headers: { authorization: `Bearer ${tokens.access_token}` } };
    expect((await loopback.get('/edge/client/v1/current-identity', bearer)).status).toBe(200);

    const revoked = await loopback.post('/oidc/revoke', {
      form: { token: tokens.refresh_token!, token_type_hint: 'refresh_token', client_id: 'svc' },
    });
    const refresh = await refreshTokens(localhost, tokens.refresh_token!);
    const me = await loopback.get('/edge/client/v1/current-identity', bearer);

    expect(revoked.status).toBe(200);
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
    expect(me.status).toBe(401);
  });
});
