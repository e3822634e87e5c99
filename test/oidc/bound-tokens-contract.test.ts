import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { openPayload } from '../../src/oidc/stored-payload.js';
import { oidcPayloadsRepository } from '../../src/repositories/oidc-payloads-repository.js';
import { passwordLogin, refreshTokens } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME } from '../helpers/test-server.js';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import {
  certLoginToCallback,
  deviceClient,
  enrolledDevice,
  exchange,
} from '../bound-tokens/bound-fixtures.js';
import { payloadOf } from './oidc-fixtures.js';

/**
 * Certificate-bound tokens are ours, not oidc-provider's per-client mTLS binding
 * (src/oidc/account-policy.ts). These are the provider behaviours that design relies on; an
 * upgrade that changes any of them must fail here before it weakens or breaks the binding.
 */
describe('contract: oidc-provider behaviour behind our certificate-bound tokens', () => {
  let server: TestServer;
  let api: ManagementApi;
  const closers: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(async () => {
    await Promise.all(closers.map((c) => c()));
    await server.close();
  });

  async function boundTokens(name: string) {
    const device = await enrolledDevice(server, api, name);
    const { config, close } = await deviceClient(server, device);
    closers.push(close);
    const mtls = server.newClient({ cert: device.cert, key: device.key });
    return { device, tokens: await exchange(config, await certLoginToCallback(server, config, mtls)) };
  }

  const storedRefreshToken = async (token: string) => {
    const row = await oidcPayloadsRepository.find(server.app.knex, 'RefreshToken', token, new Date());
    return { consumedAt: row!.consumedAt, payload: openPayload(token, row!.payload) };
  };

  test('the cnf our extraTokenClaims gives reaches the JWT access token as it is', async () => {
    const { device, tokens } = await boundTokens('contract-cnf');

    expect(payloadOf(tokens.access_token).cnf).toEqual({ 'x5t#S256': device.thumbprint });
  });

  test('the provider binds nothing itself: its refresh tokens carry no x5t#S256, unbound logins no cnf', async () => {
    const { tokens } = await boundTokens('contract-no-provider-binding');
    const password = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);

    expect((await storedRefreshToken(tokens.refresh_token!)).payload['x5t#S256']).toBeUndefined();
    expect(payloadOf(password.tokens.access_token).cnf).toBeUndefined();
  });

  test('a refresh grant loads the account before it consumes the refresh token; our refusal is a plain invalid_grant', async () => {
    const { tokens } = await boundTokens('contract-refresh-order');

    const refused = await refreshTokens(server.client, tokens.refresh_token!);

    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({
      error: 'invalid_grant',
      error_description: 'grant request is invalid',
    });
    expect((await storedRefreshToken(tokens.refresh_token!)).consumedAt).toBeNull();
  });
});
