import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash, X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { connect, type TLSSocket } from 'node:tls';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { certFingerprint } from '../../src/crypto/certificates.js';
import { generateRootCa } from '../../src/crypto/pki.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  createIdentity,
  identityDetail,
  managementApi,
  passwordLogin,
  pendingEnrollment,
  type ManagementApi,
} from './identity-fixtures.js';

/** The certificate the controller presents on a TLS connection, as an enrolling client sees it. */
async function presentedCertificate(url: string): Promise<X509Certificate> {
  const { hostname, port } = new URL(url);
  const socket: TLSSocket = connect({ host: hostname, port: Number(port), rejectUnauthorized: false });
  await once(socket, 'secureConnect');
  const raw = socket.getPeerCertificate().raw;
  socket.destroy();
  return new X509Certificate(raw);
}

describe('enrollment JWTs and completing enrollments', () => {
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  const enrollUpdb = (token: string, password: string) =>
    server.client.post(`${CLIENT}/enroll/updb?token=${encodeURIComponent(token)}`, { body: { password } });

  test('the enrollment JWT carries the decided claims and verifies with the certificate the controller presents', async () => {
    const pending = await pendingEnrollment(api, 'jwt-holder', { ott: true });
    const presented = await presentedCertificate(server.url);

    const { payload, protectedHeader } = await jwtVerify(pending.jwt, presented.publicKey);

    expect(protectedHeader.alg).toBe('ES256');
    expect(protectedHeader.kid).toBe(createHash('sha1').update(presented.raw).digest('hex'));
    expect(payload).toMatchObject({ sub: pending.identityId, jti: pending.token, em: 'ott' });
    expect(payload.iss).toBe(server.app.listeners[0]!.urls[0]);
    expect(payload.exp).toBe(Math.floor(new Date(pending.expiresAt).getTime() / 1000));
    // Default lifetime: 180 minutes.
    expect(payload.exp! - payload.iat!).toBeGreaterThanOrEqual(180 * 60 - 2);
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(180 * 60);
  });

  test('an enrollment JWT does not verify with another key', async () => {
    const pending = await pendingEnrollment(api, 'jwt-other-key', { ott: true });
    const otherCa = await generateRootCa({ commonName: 'Some other CA' });
    const other = new X509Certificate(otherCa.certPem);

    await expect(jwtVerify(pending.jwt, other.publicKey)).rejects.toThrow();
    expect(decodeProtectedHeader(pending.jwt).kid).not.toBe(certFingerprint(otherCa.certPem));
  });

  test('UPDB enrollment sets the password; the username fixed at creation then logs in', async () => {
    const pending = await pendingEnrollment(api, 'updb-one', { updb: 'updb-one-login' });

    const res = await enrollUpdb(pending.token, 'a good password');

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: {}, meta: {} });
    const login = await passwordLogin(server, 'updb-one-login', 'a good password');
    expect(login.status).toBe(200);
    const detail = await identityDetail(api, pending.identityId);
    expect(detail.enrollment).toEqual({});
    expect(detail.authenticators).toEqual({ updb: { id: expect.any(String), username: 'updb-one-login' } });
    const stored = await server.app.knex('authenticators').where({ identity_id: pending.identityId }).first();
    expect(stored.password_hash).toMatch(/^\$argon2id\$/);
  });

  test('a used token is gone: a second completion is INVALID_ENROLLMENT_TOKEN', async () => {
    const pending = await pendingEnrollment(api, 'updb-twice', { updb: 'updb-twice' });
    expect((await enrollUpdb(pending.token, 'first password')).status).toBe(200);

    const again = await enrollUpdb(pending.token, 'second password');

    expect(again.status).toBe(400);
    expect(again.body.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
    expect((await passwordLogin(server, 'updb-twice', 'second password')).status).toBe(401);
  });

  test('eight parallel completions of one token give exactly one success', async () => {
    const pending = await pendingEnrollment(api, 'updb-race', { updb: 'updb-race' });

    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => enrollUpdb(pending.token, `racing password ${i}`)),
    );

    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
    }
    const rows = await server.app.knex('authenticators').where({ identity_id: pending.identityId });
    expect(rows).toHaveLength(1);
  });

  test('an unknown token is INVALID_ENROLLMENT_TOKEN on every enroll endpoint', async () => {
    const updb = await enrollUpdb('no-such-token', 'some password');
    const ott = await server.client.post(`${CLIENT}/enroll/ott`, {
      body: { token: 'no-such-token', clientCsr: 'x' },
    });
    const ottca = await server.client.post(`${CLIENT}/enroll/ottca`, { body: { token: 'no-such-token' } });

    for (const res of [updb, ott, ottca]) {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
    }
  });

  test('an expired token is ENROLLMENT_EXPIRED', async () => {
    const pending = await pendingEnrollment(api, 'updb-expired', { updb: 'updb-expired' });
    await server.app
      .knex('enrollments')
      .where({ identity_id: pending.identityId })
      .update({ expires_at: new Date(Date.now() - 60_000) });

    const res = await enrollUpdb(pending.token, 'some password');

    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('ENROLLMENT_EXPIRED');
  });

  test('a token used at the endpoint of another method is INVALID_ENROLL_METHOD and stays usable', async () => {
    const pending = await pendingEnrollment(api, 'ott-wrong-door', { ott: true });

    const res = await enrollUpdb(pending.token, 'some password');

    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_ENROLL_METHOD');
    expect((await identityDetail(api, pending.identityId)).enrollment.ott.token).toBe(pending.token);
  });

  test('missing token or password are 400 naming the field', async () => {
    const noToken = await server.client.post(`${CLIENT}/enroll/updb`, { body: { password: 'x' } });
    const noPassword = await server.client.post(`${CLIENT}/enroll/updb?token=abc`, { body: {} });

    expect(noToken.status).toBe(400);
    expect(noToken.body.error.cause.field).toBe('token');
    expect(noPassword.status).toBe(400);
    expect(noPassword.body.error.cause.field).toBe('password');
  });

  test('the password rules of the identity policy are enforced at UPDB enrollment', async () => {
    await server.app.knex('auth_policies').insert({
      id: 'strict-passwords',
      name: 'Strict passwords',
      cert_allowed: true,
      cert_allow_expired: false,
      updb_allowed: true,
      updb_min_password_length: 12,
      updb_require_special_char: true,
      updb_require_number_char: true,
      updb_require_mixed_case: true,
      updb_max_attempts: 0,
      updb_lockout_duration_minutes: 0,
      ext_jwt_allowed: false,
      secondary_require_totp: false,
    });
    const id = await createIdentity(api, {
      name: 'strict-user',
      isAdmin: false,
      authPolicyId: 'strict-passwords',
      enrollment: { updb: 'strict-user' },
    });
    const { token } = (await identityDetail(api, id)).enrollment.updb;

    const refusals = [];
    for (const password of ['Sh0rt!', 'no digits here!AA', 'NoSpecial12345', 'all lower 123 !!']) {
      refusals.push(await enrollUpdb(token, password));
    }
    const accepted = await enrollUpdb(token, 'Good Password 123!');

    for (const res of refusals) {
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'password' } });
    }
    expect(refusals.map((r) => r.body.error.cause.reason)).toEqual([
      'must be at least 12 characters long',
      'must contain a digit',
      'must contain a character that is neither a letter nor a digit',
      'must contain both upper-case and lower-case letters',
    ]);
    expect(accepted.status).toBe(200);
    expect((await passwordLogin(server, 'strict-user', 'Good Password 123!')).status).toBe(200);
  });
});
