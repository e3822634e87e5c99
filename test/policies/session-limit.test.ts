import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectError } from '../helpers/expect-error.js';
import type { TestResponse } from '../helpers/https-client.js';
import {
  exchangeCode,
  followToCallback,
  passwordLogin as oidcPasswordLogin,
  refreshTokens,
  startAuthorization,
  submitLogin,
  type TokenSet,
} from '../helpers/oidc-client.js';
import { statementsOf } from '../helpers/sql-statements.js';
import { capturedAuditLog } from '../helpers/audit-log.js';
import { testWithPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { CLIENT, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { createUser, login, type TestUser } from '../mfa/mfa-fixtures.js';
import { createPolicy, partialLogin, postTotp } from '../second-factors/factor-fixtures.js';

/**
 * The concurrent-session limit of auth policies (`sessions.max`, `sessions.onLimit`), as a user
 * and an operator see it: which logins succeed, which tokens stop working, what the log says.
 */
describe('session limit of auth policies', () => {
  const log = capturedAuditLog();
  const auditEvents = log.events;
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    server = await startTestServer({ logger: log.logger });
    api = managementApi(server, await server.adminToken());
  }, 180_000);
  afterAll(() => server?.close());

  const sessionHeaders = (token: string) => ({ headers: { 'svc-session': token } });
  const bearerHeaders = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
  const currentSession = (headers: { headers: Record<string, string> }) =>
    server.client.get(`${CLIENT}/current-api-session`, headers);

  async function legacyToken(user: TestUser): Promise<{ token: string; id: string }> {
    const res = await login(server, user);
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
    return { token: res.body.data.token as string, id: res.body.data.id as string };
  }

  const oidcTokens = async (user: TestUser): Promise<TokenSet> =>
    (await oidcPasswordLogin(server.client, user.username, user.password)).tokens;

  testWithPostgres(
    'an identity deleted while its login waits for the limit is refused with 401, not 500',
    async () => {
      const policy = await createPolicy(api, 'deleted-while-waiting', { sessions: { max: 1 } });
      const user = await createUser(server, 'deleted-while-waiting-user', policy);
      // Another login of the identity in flight holds its session-limit lock.
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holder = server.app.knex.transaction(async (trx) => {
        await trx.raw(`select pg_advisory_xact_lock(hashtext('svc:sessions:' || ?))`, [user.id]);
        locked();
        await released;
      });
      await isLocked;
      const waiting = login(server, user);
      await new Promise((r) => setTimeout(r, 300)); // the login is waiting for the lock
      expect((await api.delete(`/identities/${user.id}`)).status).toBe(200);
      release();
      await holder;
      const res = await waiting;
      expect(res.status).toBe(401);
    },
  );

  test('the default policy and a new one have no limit: every session of an identity stays usable', async () => {
    expect((await api.get('/auth-policies/default')).body.data.sessions).toEqual({
      max: 0,
      onLimit: 'evictOldest',
    });
    const created = await api.post('/auth-policies', { body: { name: 'no-limit-given' } });
    expect((await api.get(`/auth-policies/${created.body.data.id}`)).body.data.sessions).toEqual({
      max: 0,
      onLimit: 'evictOldest',
    });
    const user = await createUser(server, 'unlimited-user');

    const legacy = [await legacyToken(user), await legacyToken(user), await legacyToken(user)];
    const oidc = [await oidcTokens(user), await oidcTokens(user)];

    for (const { token } of legacy) expect((await currentSession(sessionHeaders(token))).status).toBe(200);
    for (const t of oidc) expect((await currentSession(bearerHeaders(t.access_token))).status).toBe(200);
  });

  test('max 2, evictOldest, legacy logins: the third ends the oldest session, as a logout would', async () => {
    const policy = await createPolicy(api, 'two-evict-legacy', { sessions: { max: 2 } });
    const user = await createUser(server, 'evict-legacy-user', policy);

    const first = await legacyToken(user);
    const second = await legacyToken(user);
    const third = await legacyToken(user);

    expectError(await currentSession(sessionHeaders(first.token)), { status: 401, code: 'UNAUTHORIZED' });
    expect((await currentSession(sessionHeaders(second.token))).status).toBe(200);
    expect((await currentSession(sessionHeaders(third.token))).status).toBe(200);
    const ended = auditEvents().filter((e) => e.event === 'session.ended' && e.identityId === user.id);
    expect(ended).toEqual([expect.objectContaining({ sessionId: first.id, kind: 'legacy', cause: 'limit' })]);
  });

  test('max 2, evictOldest, OIDC and legacy logins: the oldest OIDC session gets 401 and its refresh invalid_grant', async () => {
    const policy = await createPolicy(api, 'two-evict-oidc', {
      sessions: { max: 2, onLimit: 'evictOldest' },
    });
    const user = await createUser(server, 'evict-oidc-user', policy);

    const oldest = await oidcTokens(user);
    const middle = await oidcTokens(user);
    const newest = await legacyToken(user);

    expectError(await currentSession(bearerHeaders(oldest.access_token)), {
      status: 401,
      code: 'UNAUTHORIZED',
    });
    const refused = await refreshTokens(server.client, oldest.refresh_token!);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    expect((await currentSession(bearerHeaders(middle.access_token))).status).toBe(200);
    expect((await refreshTokens(server.client, middle.refresh_token!)).status).toBe(200);
    expect((await currentSession(sessionHeaders(newest.token))).status).toBe(200);
    // And an OIDC login evicts a legacy session the same way.
    await oidcTokens(user);
    expect((await currentSession(bearerHeaders(middle.access_token))).status).toBe(401);
    expect((await currentSession(sessionHeaders(newest.token))).status).toBe(200);
    const ended = auditEvents().filter((e) => e.event === 'session.ended' && e.identityId === user.id);
    expect(ended.map((e) => [e.kind, e.cause])).toEqual([
      ['oidc', 'limit'],
      ['oidc', 'limit'],
    ]);
  });

  test('refuse: 403 SESSION_LIMIT_REACHED for the legacy and the OIDC login; the same auth request works once a session has ended', async () => {
    const policy = await createPolicy(api, 'one-refuse', { sessions: { max: 1, onLimit: 'refuse' } });
    const user = await createUser(server, 'refuse-user', policy);
    const held = await legacyToken(user);

    expectError(await login(server, user), { status: 403, code: 'SESSION_LIMIT_REACHED' });
    const started = await startAuthorization(server.client, { method: 'password' });
    const credentials = { body: { username: user.username, password: user.password } };
    expectError(await submitLogin(server.client, started, credentials), {
      status: 403,
      code: 'SESSION_LIMIT_REACHED',
    });
    // A browser gets a page that says why, and the way back to the same sign-in.
    const page = await submitLogin(server.client, started, {
      ...credentials,
      form: true,
      headers: { accept: 'text/html' },
    });
    expect(page.status).toBe(403);
    expect(page.header('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain('<title>Error: Too many sessions</title>');
    expect(page.text).toContain(`href="/oidc/login/username?authRequestID=${started.authRequestId}"`);
    // The held session was never touched.
    expect((await currentSession(sessionHeaders(held.token))).status).toBe(200);

    expect(
      (await server.client.delete(`${CLIENT}/current-api-session`, sessionHeaders(held.token))).status,
    ).toBe(200);
    const retried = await submitLogin(server.client, started, credentials);
    expect(retried.status).toBe(303);
    const callback = await followToCallback(server.client, retried);
    const tokens = await exchangeCode(server.client, {
      code: callback.code,
      verifier: started.pkce.verifier,
    });
    expect(tokens.status).toBe(200);
    expect((await currentSession(bearerHeaders(tokens.body.access_token))).status).toBe(200);
    expectError(await login(server, user), { status: 403, code: 'SESSION_LIMIT_REACHED' });
  });

  /** A verified TOTP, enrolled by a first (complete) session, which is returned with it. */
  async function enrolledWithSession(user: TestUser) {
    const held = await legacyToken(user);
    const headers = sessionHeaders(held.token);
    const started = await server.client.post(`${CLIENT}/current-identity/mfa`, headers);
    if (started.status !== 201) throw new Error(`mfa start failed: ${started.status} ${started.text}`);
    const url = started.body.data.provisioningUrl as string;
    const step = timeStepAt();
    const verified = await server.client.post(`${CLIENT}/current-identity/mfa/verify`, {
      ...headers,
      body: { code: await totpCode(url, step) },
    });
    if (verified.status !== 200) throw new Error(`mfa verify failed: ${verified.status} ${verified.text}`);
    return { held, url, step, recoveryCodes: started.body.data.recoveryCodes as string[] };
  }

  test('a session waiting for its TOTP step neither counts nor evicts; completing it evicts the oldest', async () => {
    const policy = await createPolicy(api, 'one-evict-mfa', { sessions: { max: 1 } });
    const user = await createUser(server, 'mfa-evict-user', policy);
    const { held, url, step } = await enrolledWithSession(user);

    const pending = await login(server, user);
    expect(pending.body.data.isMfaRequired).toBe(true);
    const partial = await partialLogin(server.client, user);
    expect(partial.response.status).toBe(200);
    expect((await currentSession(sessionHeaders(held.token))).status).toBe(200);

    const pendingHeaders = sessionHeaders(pending.body.data.token);
    const completed = await server.client.post(`${CLIENT}/authenticate/mfa`, {
      ...pendingHeaders,
      body: { code: await totpCode(url, step + 1) },
    });
    expect(completed.status).toBe(200);
    expect((await currentSession(pendingHeaders)).body.data.isMfaComplete).toBe(true);
    expect((await currentSession(sessionHeaders(held.token))).status).toBe(401);
  });

  test('refuse at the TOTP step: the MFA completion and the OIDC login are refused, and the session keeps waiting', async () => {
    const policy = await createPolicy(api, 'one-refuse-mfa', { sessions: { max: 1, onLimit: 'refuse' } });
    const user = await createUser(server, 'mfa-refuse-user', policy);
    const { held, url, step, recoveryCodes } = await enrolledWithSession(user);

    const pending = await login(server, user);
    expect(pending.status).toBe(200);
    const pendingHeaders = sessionHeaders(pending.body.data.token);
    expectError(
      await server.client.post(`${CLIENT}/authenticate/mfa`, {
        ...pendingHeaders,
        body: { code: await totpCode(url, step + 1) },
      }),
      { status: 403, code: 'SESSION_LIMIT_REACHED' },
    );
    expect((await currentSession(pendingHeaders)).body.data.isMfaComplete).toBe(false);
    const partial = await partialLogin(server.client, user);
    expectError(await postTotp(server.client, partial.started.authRequestId, recoveryCodes[0]!), {
      status: 403,
      code: 'SESSION_LIMIT_REACHED',
    });
    expect((await currentSession(sessionHeaders(held.token))).status).toBe(200);
  });

  test.each([
    [{ sessions: { max: -1 } }, 'sessions.max'],
    [{ sessions: { max: 1.5 } }, 'sessions.max'],
    [{ sessions: { max: 'two' } }, 'sessions.max'],
    [{ sessions: { max: 10_001 } }, 'sessions.max'],
    [{ sessions: { onLimit: 'evictNewest' } }, 'sessions.onLimit'],
    [{ sessions: { maximum: 2 } }, 'sessions.maximum'],
  ])('a bad sessions member %j is refused naming %s', async (body, field) => {
    const created = await api.post('/auth-policies', { body: { name: 'bad-sessions', ...body } });
    expect(expectError(created, { status: 400, code: 'COULD_NOT_VALIDATE' }).cause.field).toBe(field);
    const patched = await api.patch('/auth-policies/default', { body });
    expect(expectError(patched, { status: 400, code: 'COULD_NOT_VALIDATE' }).cause.field).toBe(field);
  });

  test('PATCH changes the limit alone', async () => {
    const id = await createPolicy(api, 'patch-sessions', { sessions: { max: 3, onLimit: 'refuse' } });

    expect((await api.patch(`/auth-policies/${id}`, { body: { sessions: { max: 5 } } })).status).toBe(200);
    expect((await api.get(`/auth-policies/${id}`)).body.data.sessions).toEqual({ max: 5, onLimit: 'refuse' });
  });

  describe('statements of an OIDC password login', () => {
    const loginStatements = async (user: TestUser): Promise<{ res: TestResponse; sql: string[] }> => {
      const started = await startAuthorization(server.client, { method: 'password' });
      const { result: res, sql } = await statementsOf(server.app.knex, () =>
        submitLogin(server.client, started, { body: { username: user.username, password: user.password } }),
      );
      return { res, sql };
    };

    test('max 0: the statements of a login without a limit, no transaction, no lock', async () => {
      const policy = await createPolicy(api, 'zero-statements', { sessions: { max: 0, onLimit: 'refuse' } });
      const user = await createUser(server, 'zero-statements-user', policy);

      const { res, sql } = await loginStatements(user);

      expect(res.status).toBe(303);
      expect(sql).toHaveLength(11);
      expect(sql.filter((s) => /^(BEGIN|COMMIT)/i.test(s))).toEqual([]);
      expect(sql.filter((s) => /advisory/.test(s))).toEqual([]);
    });

    test('a limited policy adds the transaction, the lock and the count: 16, plus the eviction', async () => {
      const policy = await createPolicy(api, 'two-statements', { sessions: { max: 1 } });
      const user = await createUser(server, 'two-statements-user', policy);

      const first = await loginStatements(user);
      expect(first.res.status).toBe(303);
      expect(first.sql).toHaveLength(16);
      expect(first.sql.filter((s) => /^BEGIN/i.test(s))).toHaveLength(1);
      expect(first.sql.filter((s) => /^COMMIT/i.test(s))).toHaveLength(1);
      expect(first.sql.filter((s) => /pg_advisory_xact_lock/.test(s))).toHaveLength(1);

      // The second evicts the first: finds its grant, deletes the grant's tokens and facts, the
      // Grant itself, its session, records the revocation, and stores its two audit events
      // (revocation.published, session.ended) in the same transaction: 7 more.
      const second = await loginStatements(user);
      expect(second.res.status).toBe(303);
      expect(second.sql.length).toBeGreaterThan(16);
      expect(second.sql.length).toBeLessThanOrEqual(23);
      expect(second.sql.filter((s) => /insert into "audit_events"/.test(s))).toHaveLength(3);
    });
  });
});
