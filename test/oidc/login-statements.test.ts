import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { statementsOf } from '../helpers/sql-statements.js';
import { exchangeCode, followToCallback, startAuthorization, submitLogin } from '../helpers/oidc-client.js';
import { enrolledUpdbUser, managementApi } from '../identities/identity-fixtures.js';

describe('password login: SQL statements of the login step', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test('the login POST reads the identity twice and releases its lockout in one statement; the code exchange takes three statements', async () => {
    const api = managementApi(server, await server.adminToken());
    const user = await enrolledUpdbUser(server, api, 'login-statements-user');
    const started = await startAuthorization(server.client);
    const { result: login, sql } = await statementsOf(server.app.knex, () =>
      submitLogin(server.client, started, { body: { username: user.username, password: user.password } }),
    );
    // The resume answered in-process with the redirect carrying the code.
    const callback = await followToCallback(server.client, login);
    const { result: token, sql: exchange } = await statementsOf(server.app.knex, () =>
      exchangeCode(server.client, { code: callback.code, verifier: started.pkce.verifier }),
    );
    expect(token.status).toBe(200);
    // Three statements, as for a refresh: the code with its grant, login facts, API session and
    // identity in one joined read; the conditional consume; the refresh token's insert.
    expect(exchange).toEqual([
      expect.stringMatching(/FROM oidc_payloads rt\s[\s\S]*LEFT JOIN api_sessions s[\s\S]*LEFT JOIN identities i/),
      expect.stringMatching(/^update "oidc_payloads" set "consumed_at" = .* and "consumed_at" is null$/),
      expect.stringMatching(/^insert into "oidc_payloads"/),
    ]);

    // Once to find the login's identity, once after the slow hash (a lock set meanwhile holds);
    // the provider's resume on the same request takes the identity the step has just read.
    expect(sql.filter((s) => /^select \* from "identities"/.test(s))).toHaveLength(2);
    expect(sql.filter((s) => /"login_failures"|login_failures /.test(s))).toHaveLength(2);
  });
});
