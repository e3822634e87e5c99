import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { passwordLogin } from '../helpers/oidc-client.js';

/**
 * Three different lifetimes, so a setting wired to the wrong token (or two settings swapped)
 * changes a number this test pins. docs/operations.md lists the variables.
 */
describe('token durations set through the environment', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      env: {
        SVC_OIDC_ACCESS_TOKEN_DURATION: '5m',
        SVC_OIDC_ID_TOKEN_DURATION: '7m',
        SVC_OIDC_REFRESH_TOKEN_DURATION: '3h',
      },
    });
  });
  afterAll(() => server.close());

  test('expires_in and exp - iat of the access token, the ID token and the refresh token follow each setting', async () => {
    const keys = createLocalJWKSet((await server.client.get('/oidc/keys')).body);

    const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);

    expect(tokens.expires_in).toBe(300);
    const at = (await jwtVerify(tokens.access_token, keys, { typ: 'at+jwt' })).payload;
    expect(at.exp! - at.iat!).toBe(300);
    const id = (await jwtVerify(tokens.id_token, keys)).payload;
    expect(id.exp! - id.iat!).toBe(420);
    // The refresh token is opaque; its lifetime is the one the provider stored for it.
    const [stored] = await server.app
      .knex('oidc_payloads')
      .where({ model: 'RefreshToken', account_id: at.sub })
      .select('payload');
    const rt = typeof stored.payload === 'string' ? JSON.parse(stored.payload) : stored.payload;
    expect(rt.exp - rt.iat).toBe(3 * 3600);
  });
});
