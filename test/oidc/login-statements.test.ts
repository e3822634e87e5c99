import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { statementsOf } from '../helpers/sql-statements.js';
import { exchangeCode, followToCallback, startAuthorization, submitLogin } from '../helpers/oidc-client.js';
import { enrolledUpdbUser, managementApi } from '../identities/identity-fixtures.js';

const count = (sql: string[], pattern: RegExp) => sql.filter((s) => pattern.test(s)).length;

describe('password login: SQL statements of the whole flow', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test('authorization 1, login POST 11, exchange 3: each row read once, no transaction', async () => {
    const api = managementApi(server, await server.adminToken());
    const user = await enrolledUpdbUser(server, api, 'login-statements-user');

    const { result: started, sql: authorization } = await statementsOf(server.app.knex, () =>
      startAuthorization(server.client),
    );
    const { result: login, sql } = await statementsOf(server.app.knex, () =>
      submitLogin(server.client, started, { body: { username: user.username, password: user.password } }),
    );
    // The resume answered in-process with the redirect carrying the code: nothing left to read.
    const { result: callback, sql: follow } = await statementsOf(server.app.knex, () =>
      followToCallback(server.client, login),
    );
    const { result: token, sql: exchange } = await statementsOf(server.app.knex, () =>
      exchangeCode(server.client, { code: callback.code, verifier: started.pkce.verifier }),
    );
    expect(token.status).toBe(200);

    expect(authorization).toHaveLength(1);
    expect(follow).toHaveLength(0);
    expect(sql).toHaveLength(11);
    // The interaction: read once by the step, then marked consumed by one conditional update; the
    // provider's resume takes it (and the identity) from the request, not from the database. Then
    // the grant, the facts and the code; the provider's Session is not stored.
    expect(count(sql, /"oidc_payloads"/)).toBe(5);
    expect(count(sql, /^select "payload", "consumed_at" from "oidc_payloads"/)).toBe(1);
    expect(
      count(sql, /^update "oidc_payloads" set "consumed_at" = .* and "consumed_at" is null returning 1$/),
    ).toBe(1);
    expect(count(sql, /^delete /)).toBe(0);
    // Once to find the login's identity, with its policy and the policy's signers in the same
    // statement; once more after the slow hash (a lock set meanwhile holds).
    expect(count(sql, /"identities"/)).toBe(2);
    expect(count(sql, /"auth_policies"/)).toBe(1);
    expect(sql.find((s) => /"auth_policies"/.test(s))).toMatch(
      /from "identities" inner join "auth_policies"/,
    );
    // Counted before the hash, released after it.
    expect(count(sql, /"login_failures"|login_failures /)).toBe(2);
    // The API session, the grant's login facts and the login's audit event are one statement.
    expect(count(sql, /"api_sessions"/)).toBe(1);
    expect(sql.find((s) => /"api_sessions"/.test(s))).toMatch(/insert into "audit_events"/);
    expect(count(sql, /"audit_events"/)).toBe(1);
    expect(count(sql, /^(BEGIN|COMMIT)/i)).toBe(0);

    // One joined read of the code, its grant, login facts, API session and identity; the consume;
    // the refresh token. The last two also set the end of the login's rows.
    expect(exchange).toHaveLength(3);
    expect(exchange[0]).toMatch(/FROM oidc_payloads t\s+LEFT JOIN oidc_payloads g/);
    expect(exchange[1]).toMatch(/^WITH consumed AS \(\s*UPDATE oidc_payloads SET consumed_at/);
    expect(exchange[2]).toMatch(/insert into "oidc_payloads"/);
  });

  test('without offline_access the exchange is the read and the consume: the code is bound to no provider Session', async () => {
    const started = await startAuthorization(server.client, { method: 'password', scope: 'openid' });
    const login = await submitLogin(server.client, started, {
      body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
    });
    const callback = await followToCallback(server.client, login);

    const { result: token, sql: exchange } = await statementsOf(server.app.knex, () =>
      exchangeCode(server.client, { code: callback.code, verifier: started.pkce.verifier }),
    );

    expect(token.status).toBe(200);
    expect(token.body.refresh_token).toBeUndefined();
    // oidc-provider binds a code to its Session unless `expiresWithSession` says no (its default
    // says yes without offline_access): the exchange would then look the Session up by uid.
    expect(exchange).toHaveLength(2);
    expect(exchange[0]).toMatch(/FROM oidc_payloads t\s+LEFT JOIN oidc_payloads g/);
    expect(exchange[1]).toMatch(/^WITH consumed AS/);
    const sessions = await server.app.knex('oidc_payloads').where({ model: 'Session' }).count('* as n');
    expect(Number(sessions[0]!.n)).toBe(0);
  });
});
