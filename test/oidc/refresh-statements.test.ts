import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { statementsOf } from '../helpers/sql-statements.js';
import { passwordLogin, refreshTokens } from '../helpers/oidc-client.js';
import { enrolledUpdbUser, managementApi } from '../identities/identity-fixtures.js';

describe('refresh grant: SQL statements per grant', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test('a refresh grant with rotation sends 3 statements: one read, the consume, the successor', async () => {
    const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    // Every refresh of the chain counts, the first included: nothing is warmed up beforehand.
    let refreshToken = tokens.refresh_token!;
    for (let i = 0; i < 3; i++) {
      const { result, sql } = await statementsOf(server.app.knex, () =>
        refreshTokens(server.client, refreshToken),
      );
      expect(result.status).toBe(200);
      // Read the chain, consume the presented token, store its successor; the last two also move
      // the end of the login's rows (grant, facts, API session) with the chain.
      expect(sql).toHaveLength(3);
      expect(sql[1]).toMatch(/^WITH consumed AS \(\s*UPDATE oidc_payloads SET consumed_at/);
      expect(sql[1]).toMatch(/UPDATE api_sessions SET expires_at/);
      expect(sql[2]).toMatch(/^with "login_rows" as \(UPDATE oidc_payloads SET expires_at/);
      expect(sql[2]).toMatch(/UPDATE api_sessions SET expires_at[\s\S]*insert into "oidc_payloads"/);
      refreshToken = result.body.refresh_token;
    }
  });

  test('the one read still sees a disabled identity and an ended API session', async () => {
    const api = managementApi(server, await server.adminToken());
    const user = await enrolledUpdbUser(server, api, 'refresh-read-once');
    const disabledLogin = await passwordLogin(server.client, user.username, user.password);
    const endedLogin = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);

    const disabled = await api.post(`/identities/${user.id}/disable`, { body: { durationMinutes: 0 } });
    expect(disabled.status).toBe(200);
    const asid = JSON.parse(
      Buffer.from(endedLogin.tokens.access_token.split('.')[1]!, 'base64url').toString('utf8'),
    ).z_asid as string;
    await server.app.knex('api_sessions').where({ id: asid }).delete();

    for (const tokens of [disabledLogin.tokens, endedLogin.tokens]) {
      const refresh = await refreshTokens(server.client, tokens.refresh_token!);
      expect(refresh.status).toBe(400);
      expect(refresh.body.error).toBe('invalid_grant');
    }
  });
});
