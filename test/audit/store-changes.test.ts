import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oc from 'openid-client';
import { generateRootCa } from '../../src/crypto/pki.js';
import type { AuditEventRow } from '../../src/repositories/audit-event-row.js';
import { capturedAuditLog } from '../helpers/audit-log.js';
import type { TestResponse } from '../helpers/https-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { secretFromUrl, timeStepAt, totpCode } from '../helpers/totp.js';
import {
  CLIENT,
  enrolledUpdbUser,
  identityDetail,
  managementApi,
  passwordLogin,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import { statementsOf } from '../helpers/sql-statements.js';
import { createUser } from '../mfa/mfa-fixtures.js';
import { discoverClient, issuerOf } from '../oidc/oidc-fixtures.js';
import { enrollTotp, partialLogin, postTotp } from '../second-factors/factor-fixtures.js';
import {
  namedSite,
  passkeyApi,
  registerPasskey,
  softAuthenticatorFor,
} from '../passkeys/passkey-fixtures.js';
import { oneStored, storedEvents, storedOfRequest } from './store-fixtures.js';

/**
 * Every catalogued change and login decision, made through the real API of a real server, is
 * found in `audit_events` with the columns an operator queries, and logged once as before
 * (docs/operations.md, "Audit events").
 */
describe('stored audit events', () => {
  const { logger, events } = capturedAuditLog();
  /** Every value the suite used that must never be stored. */
  const secrets: string[] = [ADMIN_PASSWORD];
  let server: TestServer;
  let api: ManagementApi;
  let adminId: string;
  let adminLogin: TestResponse;

  const requestIdOf = (res: TestResponse) => res.header('request-id')!;
  const knex = () => server.app.knex;
  /** The stored event `name` of the request that got `res`, with the log line it also wrote. */
  async function storedOf(res: TestResponse, name: string): Promise<AuditEventRow> {
    const row = await oneStored(knex(), name, requestIdOf(res));
    const lines = events().filter((e) => e.requestId === requestIdOf(res) && e.event === name);
    expect(lines).toHaveLength(1);
    expect(row.source_address).toBe(lines[0]!.sourceAddress);
    expect(row.outcome ?? undefined).toBe(lines[0]!.outcome);
    return row;
  }

  beforeAll(async () => {
    server = await startTestServer({ logger });
    adminLogin = await server.client.post('/edge/management/v1/authenticate?method=password', {
      body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
    });
    expect(adminLogin.status).toBe(200);
    adminId = adminLogin.body.data.identityId;
    secrets.push(adminLogin.body.data.token);
    api = managementApi(server, adminLogin.body.data.token);
  }, 180_000);
  afterAll(() => server?.close());

  test('a legacy login stores its success with its API session', async () => {
    const row = await storedOf(adminLogin, 'auth.login');
    expect(row).toMatchObject({
      outcome: 'success',
      identity_id: adminId,
      source_address: '127.0.0.1',
      attempts: 1,
      details: { method: 'password' },
    });
  });

  test('a change refused by a constraint stores and logs nothing', async () => {
    const first = await api.post('/identities', { body: { name: 'twice-named', isAdmin: false } });
    expect(first.status).toBe(201);
    const again = await api.post('/identities', { body: { name: 'twice-named', isAdmin: false } });
    expect(again.status).toBe(409);
    expect(await storedOfRequest(knex(), requestIdOf(again))).toEqual([]);
    expect(events().filter((e) => e.requestId === requestIdOf(again))).toEqual([]);

    // `ca.created` is inserted before the CA; the second CA of one certificate then violates the
    // fingerprint's unique constraint, and the event goes with the rolled-back transaction.
    const ca = await generateRootCa({ commonName: 'stored audit root' });
    const created = await api.post('/cas', { body: { name: 'stored-ca-1', certPem: ca.certPem } });
    expect(created.status).toBe(201);
    const twice = await api.post('/cas', { body: { name: 'stored-ca-2', certPem: ca.certPem } });
    expect(twice.status).toBe(409);
    expect(await storedOfRequest(knex(), requestIdOf(twice))).toEqual([]);
    expect(events().filter((e) => e.requestId === requestIdOf(twice))).toEqual([]);
    expect(await storedEvents(knex(), 'ca.created')).toHaveLength(1);
  });

  test('identity, policy, signer, CA, enrollment, authenticator and key changes', async () => {
    const policy = await api.post('/auth-policies', { body: { name: 'stored-policy' } });
    expect(policy.status).toBe(201);
    const policyId = policy.body.data.id as string;
    expect(await storedOf(policy, 'policy.created')).toMatchObject({
      actor_id: adminId,
      identity_id: adminId,
      details: { policyId },
    });
    const patched = await api.patch(`/auth-policies/${policyId}`, { body: { name: 'stored-policy-2' } });
    expect(patched.status).toBe(200);
    expect((await storedOf(patched, 'policy.updated')).details).toEqual({ policyId, factorsChanged: false });

    const created = await api.post('/identities', {
      body: {
        name: 'stored-user',
        isAdmin: false,
        authPolicyId: policyId,
        enrollment: { updb: 'stored-user' },
      },
    });
    expect(created.status).toBe(201);
    const userId = created.body.data.id as string;
    expect(await storedOf(created, 'identity.created')).toMatchObject({
      identity_id: userId,
      actor_id: adminId,
      details: { enrollmentMethod: 'updb' },
    });

    const { token } = (await identityDetail(api, userId)).enrollment.updb;
    const password = 'Stored-User-Secret-8812';
    secrets.push(token, password);
    const enrolled = await server.client.post(`${CLIENT}/enroll/updb?token=${token}`, { body: { password } });
    expect(enrolled.status).toBe(200);
    expect(await storedOf(enrolled, 'enrollment.completed')).toMatchObject({
      identity_id: userId,
      details: { method: 'updb' },
    });
    const authenticatorId = (await storedOf(enrolled, 'authenticator.created')).details.authenticatorId;
    expect(typeof authenticatorId).toBe('string');

    const ott = await api.post('/enrollments', { body: { method: 'ott', identityId: userId } });
    expect(ott.status).toBe(201);
    const enrollmentId = ott.body.data.id as string;
    expect(await storedOf(ott, 'enrollment.created')).toMatchObject({
      identity_id: userId,
      details: { enrollmentId, method: 'ott' },
    });
    const expiresAt = new Date(Date.now() + 3600_000).toISOString();
    const refreshed = await api.post(`/enrollments/${enrollmentId}/refresh`, { body: { expiresAt } });
    expect(refreshed.status).toBe(200);
    expect((await storedOf(refreshed, 'enrollment.refreshed')).details).toMatchObject({ enrollmentId });
    const dropped = await api.delete(`/enrollments/${enrollmentId}`);
    expect(dropped.status).toBe(200);
    expect((await storedOf(dropped, 'enrollment.deleted')).details).toMatchObject({ enrollmentId });

    const removed = await api.delete(`/authenticators/${String(authenticatorId)}`);
    expect(removed.status).toBe(200);
    expect(await storedOf(removed, 'authenticator.deleted')).toMatchObject({
      identity_id: userId,
      details: { authenticatorId },
    });

    const signerKey = await generateRootCa({ commonName: 'stored signer key' });
    const signer = await api.post('/external-jwt-signers', {
      body: {
        name: 'stored-signer',
        issuer: 'https://idp.stored.example',
        audience: 'svc',
        certPem: signerKey.certPem,
      },
    });
    expect(signer.status).toBe(201);
    const signerId = signer.body.data.id as string;
    expect((await storedOf(signer, 'signer.created')).details).toEqual({
      signerId,
      issuer: 'https://idp.stored.example',
    });
    const signerGone = await api.delete(`/external-jwt-signers/${signerId}`);
    expect(signerGone.status).toBe(200);
    expect((await storedOf(signerGone, 'signer.deleted')).details).toEqual({ signerId });

    const ca = await generateRootCa({ commonName: 'stored audit ca' });
    const caCreated = await api.post('/cas', { body: { name: 'stored-ca-3', certPem: ca.certPem } });
    expect(caCreated.status).toBe(201);
    const caId = caCreated.body.data.id as string;
    expect((await storedOf(caCreated, 'ca.created')).details).toMatchObject({ caId });
    const caGone = await api.delete(`/cas/${caId}`);
    expect(caGone.status).toBe(200);
    expect((await storedOf(caGone, 'ca.deleted')).details).toEqual({ caId });

    const rotated = await api.post('/keys/rotate');
    expect(rotated.status).toBe(200);
    expect(await storedOf(rotated, 'key.rotated')).toMatchObject({
      actor_id: adminId,
      details: { kid: rotated.body.data.kid, alg: 'RS256' },
    });

    const disabled = await api.post(`/identities/${userId}/disable`, { body: { durationMinutes: 0 } });
    expect(disabled.status).toBe(200);
    expect(await storedOf(disabled, 'identity.disabled')).toMatchObject({ identity_id: userId });
    expect(await storedOf(disabled, 'revocation.published')).toMatchObject({
      identity_id: userId,
      details: { kind: 'identity', cause: 'disabled' },
    });
    const deleted = await api.delete(`/identities/${userId}`);
    expect(deleted.status).toBe(200);
    expect(await storedOf(deleted, 'identity.deleted')).toMatchObject({
      identity_id: userId,
      actor_id: adminId,
    });
    const policyGone = await api.delete(`/auth-policies/${policyId}`);
    expect(policyGone.status).toBe(200);
    expect((await storedOf(policyGone, 'policy.deleted')).details).toEqual({ policyId });
  });

  test('TOTP: the verified enrollment, the legacy MFA step with its session, and the removal', async () => {
    const user = await enrolledUpdbUser(server, api, 'stored-totp-user');
    secrets.push(user.password, user.token);
    const session = { 'svc-session': user.token };
    const started = await server.client.post(`${CLIENT}/current-identity/mfa`, { headers: session });
    expect(started.status).toBe(201);
    const url = started.body.data.provisioningUrl as string;
    secrets.push(secretFromUrl(url), ...(started.body.data.recoveryCodes as string[]));
    const step = timeStepAt();
    const codes = [await totpCode(url, step - 1), await totpCode(url, step), await totpCode(url, step + 1)];
    secrets.push(...codes.map((c) => `"${c}"`));

    const verified = await server.client.post(`${CLIENT}/current-identity/mfa/verify`, {
      headers: session,
      body: { code: codes[0] },
    });
    expect(verified.status).toBe(200);
    expect(await storedOf(verified, 'auth.second-factor')).toMatchObject({
      outcome: 'success',
      identity_id: user.id,
      details: { method: 'totp', enrollment: true },
    });

    // A new login owes the code: the step's success commits with the session's completion.
    const login = await passwordLogin(server, user.username, user.password);
    expect(login.status).toBe(200);
    expect(login.body.data.isMfaRequired).toBe(true);
    secrets.push(login.body.data.token);
    expect(await storedOf(login, 'auth.login')).toMatchObject({ outcome: 'success', identity_id: user.id });
    const mfa = await server.client.post(`${CLIENT}/authenticate/mfa`, {
      headers: { 'svc-session': login.body.data.token },
      body: { code: codes[1] },
    });
    expect(mfa.status).toBe(200);
    expect(await storedOf(mfa, 'auth.second-factor')).toMatchObject({
      outcome: 'success',
      identity_id: user.id,
      details: { method: 'totp' },
    });

    const removed = await server.client.delete(`${CLIENT}/current-identity/mfa`, {
      headers: session,
      body: { code: codes[2] },
    });
    expect(removed.status).toBe(200);
    expect(await storedOf(removed, 'auth.second-factor')).toMatchObject({ outcome: 'success' });
    expect(await storedOf(removed, 'mfa.removed')).toMatchObject({ identity_id: user.id });
  });

  test('passkeys: a registration, and a refused one in a statement of its own', async () => {
    const user = await enrolledUpdbUser(server, api, 'stored-passkey-user');
    secrets.push(user.password, user.token);
    const site = namedSite(server);
    const passkeys = passkeyApi(site.client, user.token);
    const passkeyId = await registerPasskey(passkeys, softAuthenticatorFor(site.origin));
    const registered = (await storedEvents(knex(), 'passkey.registered', { identity_id: user.id }))[0]!;
    expect(registered.details).toMatchObject({ passkeyId, rpId: 'localhost' });

    const options = await passkeys.options();
    expect(options.status).toBe(200);
    const refused = await passkeys.register({ name: 'broken', response: { id: 'x', type: 'public-key' } });
    expect(refused.status).toBe(400);
    expect(await storedOf(refused, 'passkey.registration-failed')).toMatchObject({ identity_id: user.id });
  });

  test('an OIDC login by openid-client stores its success in the login statement; the session ends', async () => {
    const user = await enrolledUpdbUser(server, api, 'stored-oidc-user');
    secrets.push(user.password, user.token);
    const { config, close } = await discoverClient(server, issuerOf(server));
    try {
      const verifier = oc.randomPKCECodeVerifier();
      const state = oc.randomState();
      const url = oc.buildAuthorizationUrl(config, {
        redirect_uri: 'http://127.0.0.1:43210/auth/callback',
        scope: 'openid offline_access',
        code_challenge: await oc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        method: 'password',
      });
      const start = await server.client.get(url.pathname + url.search);
      const loginPage = new URL(start.header('location')!, server.url);
      const wrong = await server.client.post(loginPage.pathname, {
        body: {
          authRequestId: loginPage.searchParams.get('authRequestID'),
          username: user.username,
          password: 'Not-The-Password-77',
        },
      });
      expect(wrong.status).toBe(401);
      expect(await storedOf(wrong, 'auth.login')).toMatchObject({
        outcome: 'failure',
        identity_id: user.id,
        details: { method: 'password', reason: 'wrong-password' },
      });
      const login = await server.client.post(loginPage.pathname, {
        body: {
          authRequestId: loginPage.searchParams.get('authRequestID'),
          username: user.username,
          password: user.password,
        },
      });
      expect(login.status).toBe(303);
      const row = await storedOf(login, 'auth.login');
      expect(row).toMatchObject({
        outcome: 'success',
        identity_id: user.id,
        details: { method: 'password' },
      });
      // Stored by the statement that wrote the API session: the same transaction wrote both rows.
      const [session] = await knex()('api_sessions')
        .where({ identity_id: user.id, kind: 'oidc' })
        .select(knex().raw('xmin::text AS xmin'));
      expect(String(BigInt(row.tx) % 2n ** 32n)).toBe(session.xmin);
      const tokens = await oc.authorizationCodeGrant(config, new URL(login.header('location')!), {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
      secrets.push(tokens.access_token, tokens.refresh_token!, tokens.id_token!, verifier);
      const refreshed = await oc.refreshTokenGrant(config, tokens.refresh_token!);
      secrets.push(refreshed.access_token, refreshed.refresh_token!);

      const ended = await server.client.delete(`${CLIENT}/current-api-session`, {
        headers: { authorization: `Bearer ${refreshed.access_token}` },
      });
      expect(ended.status).toBe(200);
      expect(await storedOf(ended, 'session.ended')).toMatchObject({
        identity_id: user.id,
        details: { kind: 'oidc', cause: 'logout' },
      });
      expect(await storedOf(ended, 'revocation.published')).toMatchObject({
        details: { kind: 'api-session', cause: 'session-ended' },
      });
    } finally {
      await close();
    }
  });

  test('an OIDC login that owes a TOTP code stores each decision in the statement its step sends anyway', async () => {
    const user = await createUser(server, 'stored-oidc-totp-user');
    secrets.push(user.password);
    const { url, step, recoveryCodes } = await enrollTotp(server, user);
    secrets.push(secretFromUrl(url), ...recoveryCodes);

    const { result: partial, sql: primarySql } = await statementsOf(knex(), () =>
      partialLogin(server.client, user),
    );
    expect(partial.response.status).toBe(200);
    expect(await storedOf(partial.response, 'auth.login')).toMatchObject({
      outcome: 'success',
      identity_id: user.id,
    });
    // The success went with the auth request's progress: one statement wrote both.
    const progress = primarySql.filter((q) => /"audit_events"/.test(q));
    expect(progress).toHaveLength(1);
    expect(progress[0]).toMatch(/insert into "oidc_payloads"/);

    const code = await totpCode(url, step + 1);
    const { result: done, sql: stepSql } = await statementsOf(knex(), () =>
      postTotp(server.client, partial.started.authRequestId, code),
    );
    expect(done.status).toBe(303);
    expect(await storedOf(done, 'auth.second-factor')).toMatchObject({
      outcome: 'success',
      identity_id: user.id,
      details: { method: 'totp' },
    });
    // …and the code's with the grant's API session and login facts.
    const completion = stepSql.filter((q) => /"audit_events"/.test(q));
    expect(completion).toHaveLength(1);
    expect(completion[0]).toMatch(/insert into "api_sessions"/);
  });

  test('a legacy logout stores session.ended with its revocation', async () => {
    const ended = await server.client.delete(`${CLIENT}/current-api-session`, {
      headers: { 'svc-session': adminLogin.body.data.token },
    });
    expect(ended.status).toBe(200);
    expect(await storedOf(ended, 'session.ended')).toMatchObject({
      identity_id: adminId,
      details: { kind: 'legacy', cause: 'logout' },
    });
  });

  test('nothing secret in any stored row', async () => {
    const rows = await knex()('audit_events').select('*');
    expect(rows.length).toBeGreaterThan(20);
    const stored = JSON.stringify(rows);
    for (const secret of secrets) expect(stored).not.toContain(secret);
    // The events that record a change never name the password, token or code fields.
    expect(stored).not.toMatch(/"(password|token|code|secret|privateKey)"\s*:/i);
  });
});
