import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { generateClientKeyAndCsr } from '../../src/crypto/pki.js';
import {
  exchangeCode,
  followToCallback,
  refreshTokens,
  startAuthorization,
  submitLogin,
} from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  enrolledUpdbUser,
  managementApi,
  pendingEnrollment,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import { payloadOf } from './oidc-fixtures.js';

/** Every row of every table of the schema, as one string (what a dump or the WAL would show). */
async function dumpDatabase(server: TestServer): Promise<string> {
  const { rows } = await server.app.knex.raw(
    `SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
  );
  const parts: string[] = [];
  for (const { table_name: table } of rows as { table_name: string }[]) {
    parts.push(table, JSON.stringify(await server.app.knex(table).select('*')));
  }
  return parts.join('\n');
}

describe('a database dump yields no usable secret (docs/adr/0004-hashed-token-ids.md)', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  test('after a PKCE login with offline_access and an ott enrollment, no token, code or id is stored; all still work', async () => {
    const user = await enrolledUpdbUser(server, api, 'at-rest-user');
    const enrollment = await pendingEnrollment(api, 'at-rest-ott', { ott: true });
    const started = await startAuthorization(server.client, { method: 'password' });
    const login = await submitLogin(server.client, started, {
      body: { username: user.username, password: user.password },
    });
    const sessionId = /(?:^|[\s,])_session=([^;]+)/.exec(login.header('set-cookie') ?? '')?.[1];
    const callback = await followToCallback(server.client, login);
    const exchanged = await exchangeCode(server.client, {
      code: callback.code,
      verifier: started.pkce.verifier,
    });
    expect(exchanged.status).toBe(200);
    const refreshToken = exchanged.body.refresh_token as string;
    const accessJti = payloadOf(exchanged.body.access_token).jti as string;

    const dump = await dumpDatabase(server);

    const secrets = {
      refreshToken,
      code: callback.code,
      accessJti,
      interactionId: started.authRequestId,
      sessionId,
      enrollmentToken: enrollment.token,
    };
    for (const [name, value] of Object.entries(secrets)) {
      expect([name, typeof value === 'string' && value.length >= 16]).toEqual([name, true]);
      expect([name, dump.includes(value!)]).toEqual([name, false]);
    }

    const refreshed = await refreshTokens(server.client, refreshToken);
    expect(refreshed.status).toBe(200);
    const reused = await exchangeCode(server.client, {
      code: callback.code,
      verifier: started.pkce.verifier,
    });
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('invalid_grant');
    // Code reuse revokes the grant (RFC 6749 §4.1.2): found through the hashed grant id.
    const afterReuse = await refreshTokens(server.client, refreshed.body.refresh_token);
    expect(afterReuse.body.error).toBe('invalid_grant');
    const { csrPem } = await generateClientKeyAndCsr({ commonName: 'at-rest-ott' });
    const enrolled = await server.client.post(`${CLIENT}/enroll/ott`, {
      body: { token: enrollment.token, clientCsr: csrPem },
    });
    expect(enrolled.status).toBe(200);
  });
});
