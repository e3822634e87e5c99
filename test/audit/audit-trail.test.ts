import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { pino } from 'pino';
import type { TestResponse } from '../helpers/https-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { exchangeCode, followToCallback, startAuthorization, submitLogin } from '../helpers/oidc-client.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { generateRootCa } from '../../src/crypto/pki.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  CLIENT,
  createIdentity,
  identityDetail,
  managementApi,
  passwordLogin,
  type ManagementApi,
} from '../identities/identity-fixtures.js';

type Line = Record<string, any>;

/**
 * The audit trail as an operator reads it: the server's own pino log, captured line by line
 * from a real server driven over HTTPS.
 */
describe('audit trail', () => {
  const raw: string[] = [];
  const lines = (): Line[] =>
    raw
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Line);
  const events = (): Line[] => lines().filter((l) => l.audit === true);
  /** Every value the test used that must never be logged. */
  const secrets: string[] = [ADMIN_PASSWORD];
  let server: TestServer;
  let api: ManagementApi;
  let adminId: string;

  const requestIdOf = (res: TestResponse) => {
    const id = res.header('request-id');
    if (!id) throw new Error('no request-id header');
    return id;
  };
  const eventsOf = (res: TestResponse) => events().filter((e) => e.requestId === requestIdOf(res));
  /** The one event named `name` of the request that got `res`. */
  function eventOf(res: TestResponse, name: string): Line {
    const found = eventsOf(res).filter((e) => e.event === name);
    expect(found).toHaveLength(1);
    expect(found[0]!.sourceAddress).toBe('127.0.0.1');
    return found[0]!;
  }

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (chunk: string) => void raw.push(chunk) });
    server = await startTestServer({ logger });
    const login = await server.client.post('/edge/management/v1/authenticate?method=password', {
      body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
    });
    expect(login.status).toBe(200);
    secrets.push(login.body.data.token);
    adminId = login.body.data.identityId;
    expect(eventOf(login, 'auth.login')).toMatchObject({
      method: 'password',
      outcome: 'success',
      identityId: adminId,
    });
    api = managementApi(server, login.body.data.token);
  }, 180_000);
  afterAll(() => server?.close());

  let policyId: string;
  let userId: string;
  const username = 'audited-user';
  const password = 'Audited-Secret-Pw-7431';

  test('policy and identity changes are recorded after commit, with the admin as actor', async () => {
    const policy = await api.post('/auth-policies', {
      body: { name: 'audit-three', primary: { updb: { maxAttempts: 3, lockoutDurationMinutes: 5 } } },
    });
    expect(policy.status).toBe(201);
    policyId = policy.body.data.id;
    expect(eventOf(policy, 'policy.created')).toMatchObject({
      policyId,
      actorId: adminId,
      identityId: adminId,
    });

    const created = await api.post('/identities', {
      body: { name: username, isAdmin: false, authPolicyId: policyId, enrollment: { updb: username } },
    });
    expect(created.status).toBe(201);
    userId = created.body.data.id;
    expect(eventOf(created, 'identity.created')).toMatchObject({
      identityId: userId,
      actorId: adminId,
      enrollmentMethod: 'updb',
    });

    const { token } = (await identityDetail(api, userId)).enrollment.updb;
    secrets.push(token);
    const enrolled = await server.client.post(`${CLIENT}/enroll/updb?token=${token}`, { body: { password } });
    expect(enrolled.status).toBe(200);
    secrets.push(password);
    expect(eventOf(enrolled, 'enrollment.completed')).toMatchObject({ identityId: userId, method: 'updb' });
    expect(eventOf(enrolled, 'authenticator.created')).toMatchObject({ identityId: userId, method: 'updb' });

    const renamed = await api.patch(`/identities/${userId}`, { body: { roleAttributes: ['audited'] } });
    expect(renamed.status).toBe(200);
    expect(eventOf(renamed, 'identity.updated')).toMatchObject({
      identityId: userId,
      fields: ['roleAttributes'],
    });

    // Rolled back: the policy does not exist, so nothing was created and nothing is audited.
    const refused = await api.post('/identities', {
      body: { name: 'never-made', isAdmin: false, authPolicyId: 'no-such-policy' },
    });
    expect(refused.status).toBe(404);
    expect(eventsOf(refused)).toEqual([]);
  });

  test('login successes, failures with reasons, and the lockout', async () => {
    const ok = await passwordLogin(server, username, password);
    expect(ok.status).toBe(200);
    secrets.push(ok.body.data.token);
    expect(eventOf(ok, 'auth.login')).toMatchObject({
      method: 'password',
      outcome: 'success',
      identityId: userId,
    });

    const unknown = await passwordLogin(server, 'nobody-here', 'Unknown-User-Secret-1');
    secrets.push('Unknown-User-Secret-1');
    expect(unknown.status).toBe(401);
    expect(eventOf(unknown, 'auth.login')).toMatchObject({ outcome: 'failure', reason: 'unknown-username' });
    expect(eventOf(unknown, 'auth.login').identityId).toBeUndefined();

    const wrongs: TestResponse[] = [];
    for (let i = 1; i <= 3; i++) {
      secrets.push(`Wrong-Secret-Pw-${i}`);
      wrongs.push(await passwordLogin(server, username, `Wrong-Secret-Pw-${i}`));
    }
    expect(wrongs.map((r) => r.status)).toEqual([401, 401, 401]);
    for (const res of wrongs.slice(0, 2)) {
      expect(eventOf(res, 'auth.login')).toMatchObject({
        outcome: 'failure',
        reason: 'wrong-password',
        identityId: userId,
      });
    }
    expect(eventOf(wrongs[2]!, 'auth.login')).toMatchObject({ outcome: 'lockout', identityId: userId });
    expect(eventOf(wrongs[2]!, 'revocation.published')).toMatchObject({
      kind: 'identity',
      identityId: userId,
      cause: 'lockout',
    });

    const locked = await passwordLogin(server, username, password);
    expect(locked.status).toBe(401);
    expect(eventOf(locked, 'auth.login')).toMatchObject({
      outcome: 'failure',
      reason: 'identity-disabled-or-locked',
    });

    const enabled = await api.post(`/identities/${userId}/enable`);
    expect(enabled.status).toBe(200);
    expect(eventOf(enabled, 'identity.enabled')).toMatchObject({ identityId: userId, actorId: adminId });
  });

  test('the OIDC login pages audit each primary step the same way', async () => {
    const started = await startAuthorization(server.client, { method: 'password' });
    const wrong = await submitLogin(server.client, started, {
      body: { username, password: 'Oidc-Wrong-Secret-9' },
    });
    secrets.push('Oidc-Wrong-Secret-9');
    expect(wrong.status).toBe(401);
    expect(eventOf(wrong, 'auth.login')).toMatchObject({
      method: 'password',
      outcome: 'failure',
      reason: 'wrong-password',
      identityId: userId,
    });

    const right = await submitLogin(server.client, started, { body: { username, password } });
    expect(right.status).toBe(303);
    expect(eventOf(right, 'auth.login')).toMatchObject({
      method: 'password',
      outcome: 'success',
      identityId: userId,
    });
    const callback = await followToCallback(server.client, right, started.redirectUri);
    const tokens = await exchangeCode(server.client, {
      code: callback.code,
      verifier: started.pkce.verifier,
      redirectUri: started.redirectUri,
    });
    expect(tokens.status).toBe(200);
    secrets.push(callback.code, tokens.body.access_token, tokens.body.id_token, started.pkce.verifier);
    if (tokens.body.refresh_token) secrets.push(tokens.body.refresh_token);
  });

  test('TOTP second factor: enrollment, a wrong code and a right one', async () => {
    const login = await passwordLogin(server, username, password);
    expect(login.status).toBe(200);
    const session = { 'svc-session': login.body.data.token as string };
    secrets.push(session['svc-session']);
    const started = await server.client.post(`${CLIENT}/current-identity/mfa`, { headers: session });
    expect(started.status).toBe(201);
    const url = started.body.data.provisioningUrl as string;
    secrets.push(new URL(url).searchParams.get('secret')!, ...(started.body.data.recoveryCodes as string[]));

    const step = timeStepAt();
    const right = await totpCode(url, step);
    const wrong = right === '000000' ? '111111' : '000000';
    const bad = await server.client.post(`${CLIENT}/current-identity/mfa/verify`, {
      headers: session,
      body: { code: wrong },
    });
    expect(bad.status).toBe(400);
    expect(eventOf(bad, 'auth.second-factor')).toMatchObject({
      method: 'totp',
      outcome: 'failure',
      identityId: userId,
      enrollment: true,
    });
    const good = await server.client.post(`${CLIENT}/current-identity/mfa/verify`, {
      headers: session,
      body: { code: right },
    });
    expect(good.status).toBe(200);
    expect(eventOf(good, 'auth.second-factor')).toMatchObject({
      method: 'totp',
      outcome: 'success',
      identityId: userId,
    });
    // A code is never logged (as a JSON string value: six digits may appear inside numbers).
    expect(raw.join('')).not.toContain(`"${right}"`);
  });

  test('a change whose transaction rolls back after its event was registered is never recorded', async () => {
    // The CA service registers `ca.created` before its insert; the second insert of one
    // certificate violates the fingerprint's unique constraint and rolls back.
    const ca = await generateRootCa({ commonName: 'audit root' });
    const first = await api.post('/cas', { body: { name: 'audit-ca-1', certPem: ca.certPem } });
    expect(first.status).toBe(201);
    expect(eventOf(first, 'ca.created')).toMatchObject({ caId: first.body.data.id, actorId: adminId });
    const again = await api.post('/cas', { body: { name: 'audit-ca-2', certPem: ca.certPem } });
    expect(again.status).toBe(409);
    expect(eventsOf(again)).toEqual([]);
    expect(events().filter((e) => e.event === 'ca.created')).toHaveLength(1);
  });

  test('a factor change of the policy, key rotation, disable and delete publish revocations', async () => {
    const patched = await api.patch(`/auth-policies/${policyId}`, {
      body: { secondary: { requireTotp: true } },
    });
    expect(patched.status).toBe(200);
    expect(eventOf(patched, 'policy.updated')).toMatchObject({ policyId, factorsChanged: true });
    expect(eventOf(patched, 'revocation.published')).toMatchObject({
      identityId: userId,
      cause: 'policy-changed',
    });

    const rotated = await api.post('/keys/rotate');
    expect(rotated.status).toBe(200);
    expect(eventOf(rotated, 'key.rotated')).toMatchObject({ kid: rotated.body.data.kid, actorId: adminId });

    const disabled = await api.post(`/identities/${userId}/disable`, { body: { durationMinutes: 0 } });
    expect(disabled.status).toBe(200);
    expect(eventOf(disabled, 'identity.disabled')).toMatchObject({ identityId: userId });
    expect(eventOf(disabled, 'revocation.published')).toMatchObject({
      identityId: userId,
      cause: 'disabled',
    });

    const other = await createIdentity(api, { name: 'audit-doomed', isAdmin: false });
    const deleted = await api.delete(`/identities/${other}`);
    expect(deleted.status).toBe(200);
    expect(eventOf(deleted, 'identity.deleted')).toMatchObject({ identityId: other, actorId: adminId });
    expect(eventOf(deleted, 'revocation.published')).toMatchObject({ identityId: other, cause: 'deleted' });

    // Refused and rolled back: the default admin stays, and no deletion is audited.
    const refused = await api.delete(`/identities/${adminId}`);
    expect(refused.status).toBe(400);
    expect(eventsOf(refused).filter((e) => e.event === 'identity.deleted')).toEqual([]);

    // The revocation feed hands every process (this one included) what was published; those
    // events belong to no request.
    await waitFor(() =>
      events().some((e) => e.event === 'revocation.received' && e.identityId === other && !e.requestId),
    );

    const ended = await server.client.delete(`${CLIENT}/current-api-session`, {
      headers: { 'svc-session': secrets[1]! },
    });
    expect(ended.status).toBe(200);
    expect(eventOf(ended, 'session.ended')).toMatchObject({ kind: 'legacy', identityId: adminId });
  });

  test('no secret used in this suite appears anywhere in the log', () => {
    const log = raw.join('');
    expect(log.length).toBeGreaterThan(0);
    for (const secret of secrets) expect(log).not.toContain(secret);
  });
});
