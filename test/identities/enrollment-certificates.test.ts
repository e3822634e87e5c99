import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import {
  certFingerprint,
  parseCertificate,
  splitPemBundle,
  verifyChain,
} from '../../src/crypto/certificates.js';
import {
  generateClientKeyAndCsr,
  generateRootCa,
  issueClientCert,
  type KeyedCert,
} from '../../src/crypto/pki.js';
import { selfIssuedChain } from '../helpers/self-issued-chain.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  identityDetail,
  managementApi,
  pendingEnrollment as pendingOf,
  registerCa as registerCaIn,
  type ManagementApi,
} from './identity-fixtures.js';

describe('completing certificate enrollments (OTT and OTTCA)', () => {
  let server: TestServer;
  let api: ManagementApi;
  let thirdPartyCa: KeyedCert;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    thirdPartyCa = await generateRootCa({ commonName: 'Third Party Test CA' });
  });
  afterAll(() => server.close());

  const pendingEnrollment = (name: string, enrollment: Record<string, unknown>) =>
    pendingOf(api, name, enrollment);
  const registerCa = (ca: KeyedCert, flags: { isVerified: boolean; isOttCaEnrollmentEnabled: boolean }) =>
    registerCaIn(server, ca, flags);

  test('OTT enrollment returns a chain that verifies against the CA bundle and names the identity', async () => {
    const pending = await pendingEnrollment('ott-device', { ott: true });
    const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: 'anything' });

    const res = await server.client.post(`${CLIENT}/enroll/ott`, {
      body: { token: pending.token, clientCsr: csrPem },
    });

    expect(res.status).toBe(200);
    const [leaf, ...rest] = splitPemBundle(res.body.data.cert);
    expect(rest.length).toBeGreaterThanOrEqual(1);
    expect(await verifyChain(leaf!, rest, splitPemBundle(server.ca), new Date())).toBe(true);
    expect(parseCertificate(leaf!).uriSans).toEqual([`spiffe://svc/identity/${pending.identityId}`]);
    expect(new X509Certificate(leaf!).checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
    const detail = await identityDetail(api, pending.identityId);
    expect(detail.authenticators).toEqual({
      cert: { id: expect.any(String), fingerprint: certFingerprint(leaf!) },
    });
    expect(detail.enrollment).toEqual({});
    // The certificate is accepted in a mutual-TLS handshake with the controller.
    const mtls = server.newClient({ cert: res.body.data.cert, key: keyPem });
    expect((await mtls.get('/health/live')).status).toBe(200);
  });

  test('a bad CSR is 400 on field clientCsr and leaves the token usable', async () => {
    const pending = await pendingEnrollment('ott-bad-csr', { ott: true });

    const res = await server.client.post(`${CLIENT}/enroll/ott`, {
      body: { token: pending.token, clientCsr: 'not a csr' },
    });

    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'clientCsr' } });
    expect((await identityDetail(api, pending.identityId)).enrollment.ott.token).toBe(pending.token);
  });

  test('OTTCA enrollment over mutual TLS with a certificate of the enrollment CA creates the cert authenticator', async () => {
    const caId = await registerCa(thirdPartyCa, { isVerified: true, isOttCaEnrollmentEnabled: true });
    const pending = await pendingEnrollment('ottca-device', { ottca: caId });
    const client = await issueClientCert(thirdPartyCa, { commonName: 'ottca-device' });

    const res = await server
      .newClient({ cert: client.certPem, key: client.keyPem })
      .post(`${CLIENT}/enroll/ottca`, { body: { token: pending.token } });

    expect(res.status).toBe(200);
    const detail = await identityDetail(api, pending.identityId);
    expect(detail.authenticators).toEqual({
      cert: { id: expect.any(String), fingerprint: certFingerprint(client.certPem) },
    });
    const stored = await server.app.knex('authenticators').where({ identity_id: pending.identityId }).first();
    expect(stored).toMatchObject({ method: 'cert', ca_id: caId, is_extendable: false });
  });

  test('OTTCA refuses a missing certificate, a certificate of another CA and a used certificate', async () => {
    const caId = await registerCa(await generateRootCa({ commonName: 'OTTCA CA 2' }), {
      isVerified: true,
      isOttCaEnrollmentEnabled: true,
    });
    const pending = await pendingEnrollment('ottca-refusals', { ottca: caId });
    const stranger = await issueClientCert(thirdPartyCa, { commonName: 'stranger' });

    const none = await server.client.post(`${CLIENT}/enroll/ottca`, { body: { token: pending.token } });
    const wrongCa = await server
      .newClient({ cert: stranger.certPem, key: stranger.keyPem })
      .post(`${CLIENT}/enroll/ottca`, { body: { token: pending.token } });

    for (const res of [none, wrongCa]) {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('CERTIFICATE_FAILED_VALIDATION');
    }
    expect((await identityDetail(api, pending.identityId)).enrollment.ottca.token).toBe(pending.token);
  });

  test('OTTCA refuses a leaf sent with 9 self-issued intermediates at once and keeps the token', async () => {
    const caId = await registerCa(await generateRootCa({ commonName: 'OTTCA CA 3' }), {
      isVerified: true,
      isOttCaEnrollmentEnabled: true,
    });
    const pending = await pendingEnrollment('ottca-crafted', { ottca: caId });
    const { leaf, intermediates } = await selfIssuedChain(9, 'OTTCA Crafted CA');

    const started = performance.now();
    const res = await server
      .newClient({ cert: leaf.certPem + intermediates.join(''), key: leaf.keyPem })
      .post(`${CLIENT}/enroll/ottca`, { body: { token: pending.token } });
    const elapsed = performance.now() - started;

    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('CERTIFICATE_FAILED_VALIDATION');
    // Generous: milliseconds here; trying every ordering of the intermediates took minutes.
    expect(elapsed).toBeLessThan(3000);
    expect((await identityDetail(api, pending.identityId)).enrollment.ottca.token).toBe(pending.token);
  });

  test('a certificate already bound to another identity is 409 and the token stays usable', async () => {
    const sharedCa = await generateRootCa({ commonName: 'OTTCA shared CA' });
    const caId = await registerCa(sharedCa, { isVerified: true, isOttCaEnrollmentEnabled: true });
    const first = await pendingEnrollment('ottca-first', { ottca: caId });
    const second = await pendingEnrollment('ottca-second', { ottca: caId });
    const shared = await issueClientCert(sharedCa, { commonName: 'shared' });
    const mtls = server.newClient({ cert: shared.certPem, key: shared.keyPem });

    const ok = await mtls.post(`${CLIENT}/enroll/ottca`, { body: { token: first.token } });
    const dup = await mtls.post(`${CLIENT}/enroll/ottca`, { body: { token: second.token } });

    expect(ok.status).toBe(200);
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ code: 'CONFLICT', cause: { field: 'fingerprint' } });
    expect((await identityDetail(api, second.identityId)).enrollment.ottca.token).toBe(second.token);
  });

  test('an unverified CA or one without OTTCA enrollment is ENROLLMENT_CA_NOT_VALID', async () => {
    const unverified = await registerCa(await generateRootCa({ commonName: 'Unverified CA' }), {
      isVerified: false,
      isOttCaEnrollmentEnabled: true,
    });
    const disabled = await registerCa(await generateRootCa({ commonName: 'No OTTCA CA' }), {
      isVerified: true,
      isOttCaEnrollmentEnabled: false,
    });
    const a = await pendingEnrollment('ottca-unverified', { ottca: unverified });
    const b = await pendingEnrollment('ottca-disabled', { ottca: disabled });

    const ra = await server.client.post(`${CLIENT}/enroll/ottca`, { body: { token: a.token } });
    const rb = await server.client.post(`${CLIENT}/enroll/ottca`, { body: { token: b.token } });

    expect(ra.status).toBe(400);
    expect(ra.body.error.code).toBe('ENROLLMENT_CA_NOT_VALID');
    expect(rb.status).toBe(400);
    expect(rb.body.error.code).toBe('ENROLLMENT_CA_NOT_VALID');
  });
});
