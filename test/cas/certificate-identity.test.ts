import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { pino } from 'pino';
import { certFingerprint, certTbsSha256 } from '../../src/crypto/certificates.js';
import { generateSigningCa, issueClientCert, type KeyedCert } from '../../src/crypto/pki.js';
import { malleatedCopy } from '../helpers/hostile-certificates.js';
import { usingPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  identityDetail,
  managementApi,
  pendingEnrollment,
  registerCaByApi,
  type ManagementApi,
} from '../identities/identity-fixtures.js';

type Line = Record<string, any>;

/**
 * A certificate of an auto-enrolling CA is one device, whatever encoding its ECDSA signature has,
 * and an admin can shut it out for good by deleting its identity (docs/operations.md "Stopping a
 * device").
 */
describe(`a certificate is one identity, and a deleted one stays out (${usingPostgres ? 'PostgreSQL' : 'PGlite'})`, () => {
  const raw: string[] = [];
  const auditEvents = (name: string): Line[] =>
    raw
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.audit === true && l.event === name);
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (chunk: string) => void raw.push(chunk) });
    server = await startTestServer({ logger });
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  /** The device presents `certPem` with its own key, as a TLS client would. */
  const asDevice = (device: KeyedCert, certPem = device.certPem) =>
    server.newClient({ cert: certPem, key: device.keyPem });
  const enroll = (device: KeyedCert, certPem?: string) =>
    asDevice(device, certPem).post(`${CLIENT}/enroll?method=ca`);
  const certLogin = (device: KeyedCert, certPem?: string) =>
    asDevice(device, certPem).post(`${CLIENT}/authenticate?method=cert`);
  /** The certificate and its re-encoded copy are both refused at auto enrollment, as from an unknown CA. */
  async function expectShutOut(device: KeyedCert): Promise<void> {
    for (const res of [await enroll(device), await enroll(device, malleatedCopy(device.certPem))]) {
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('INVALID_AUTH');
    }
  }
  const identityCount = async () => Number((await server.app.knex('identities').count({ n: '*' }))[0]!.n);
  const identityOf = async (certPem: string) =>
    (
      await server.app
        .knex('authenticators')
        .where({ cert_fingerprint: certFingerprint(certPem) })
        .first()
    )?.identity_id as string | undefined;

  test('a copy with the signature re-encoded as (r, n − s) verifies, yet is the same identity, not a new one', async () => {
    const { ca } = await registerCaByApi(api, 'malleable', { isAutoCaEnrollmentEnabled: true });
    const device = await issueClientCert(ca, { commonName: 'ecdev' });
    const copy = malleatedCopy(device.certPem);
    expect(new X509Certificate(copy).verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(certFingerprint(copy)).not.toBe(certFingerprint(device.certPem));
    expect((await enroll(device)).status).toBe(200);
    const identityId = (await identityOf(device.certPem))!;
    expect(
      (await api.post(`/identities/${identityId}/disable`, { body: { durationMinutes: 0 } })).status,
    ).toBe(200);
    const before = await identityCount();

    const enrolledCopy = await enroll(device, copy);
    const disabledLogin = await certLogin(device, copy);

    expect(enrolledCopy.status).toBe(409);
    expect(enrolledCopy.body.error.code).toBe('CONFLICT');
    expect(disabledLogin.status).toBe(401);
    expect(await identityCount()).toBe(before);
    expect((await api.post(`/identities/${identityId}/enable`)).status).toBe(200);
    const login = await certLogin(device, copy);
    expect(login.status).toBe(200);
    expect(login.body.data.identityId).toBe(identityId);
    expect(await identityCount()).toBe(before);
  });

  test('deleting the identity blocks its certificate and every copy: enrollment answers 401 as for an unknown CA', async () => {
    const { id: caId, ca } = await registerCaByApi(api, 'blocking', { isAutoCaEnrollmentEnabled: true });
    const device = await issueClientCert(ca, { commonName: 'gone-device' });
    expect((await enroll(device)).status).toBe(200);
    const identityId = (await identityOf(device.certPem))!;
    const { name } = await identityDetail(api, identityId);
    const before = await identityCount();

    const deleted = await api.delete(`/identities/${identityId}`);
    await expectShutOut(device);
    const list = await api.get(`/cas/${caId}/blocked-certificates`);

    expect(deleted.status).toBe(200);
    expect(await identityCount()).toBe(before - 1);
    expect(list.status).toBe(200);
    expect(list.body.meta.pagination).toMatchObject({ totalCount: 1 });
    expect(list.body.data).toEqual([
      {
        id: expect.any(String),
        caId,
        tbsSha256: certTbsSha256(device.certPem),
        fingerprint: certFingerprint(device.certPem),
        subject: 'CN=gone-device',
        commonName: 'gone-device',
        identityId,
        identityName: name,
        createdAt: expect.any(String),
      },
    ]);
    expect(auditEvents('certificate.blocked')).toContainEqual(
      expect.objectContaining({
        caId,
        blockId: list.body.data[0].id,
        identityId,
        fingerprint: certFingerprint(device.certPem),
      }),
    );
  });

  test('lifting the block lets the certificate enroll again, as a new identity', async () => {
    const { id: caId, ca } = await registerCaByApi(api, 'lifting', { isAutoCaEnrollmentEnabled: true });
    const device = await issueClientCert(ca, { commonName: 'back-device' });
    expect((await enroll(device)).status).toBe(200);
    const firstId = (await identityOf(device.certPem))!;
    expect((await api.delete(`/identities/${firstId}`)).status).toBe(200);
    expect((await enroll(device)).status).toBe(401);
    const [entry] = (await api.get(`/cas/${caId}/blocked-certificates`)).body.data;

    const lifted = await api.delete(`/cas/${caId}/blocked-certificates/${entry.id}`);
    const liftedAgain = await api.delete(`/cas/${caId}/blocked-certificates/${entry.id}`);
    const enrolled = await enroll(device);

    expect(lifted.status).toBe(200);
    expect(liftedAgain.status).toBe(404);
    expect(enrolled.status).toBe(200);
    const secondId = await identityOf(device.certPem);
    expect(secondId).toBeDefined();
    expect(secondId).not.toBe(firstId);
    expect((await certLogin(device)).status).toBe(200);
    expect((await api.get(`/cas/${caId}/blocked-certificates`)).body.data).toEqual([]);
    expect(auditEvents('certificate.unblocked')).toContainEqual(
      expect.objectContaining({ caId, blockId: entry.id, tbsSha256: certTbsSha256(device.certPem) }),
    );
  });

  test('the block list of an unknown CA, and an entry of another CA, are 404', async () => {
    const { id: caId, ca } = await registerCaByApi(api, 'other-ca', { isAutoCaEnrollmentEnabled: true });
    const { id: otherCaId } = await registerCaByApi(api, 'other-ca-2');
    const device = await issueClientCert(ca, { commonName: 'listed' });
    expect((await enroll(device)).status).toBe(200);
    expect((await api.delete(`/identities/${(await identityOf(device.certPem))!}`)).status).toBe(200);
    const [entry] = (await api.get(`/cas/${caId}/blocked-certificates`)).body.data;

    expect((await api.get('/cas/no-such-ca/blocked-certificates')).status).toBe(404);
    expect((await api.delete(`/cas/${otherCaId}/blocked-certificates/${entry.id}`)).status).toBe(404);
    expect((await enroll(device)).status).toBe(401);
  });

  test('deleting only the certificate authenticator blocks the certificate too: no new identity from it', async () => {
    const { id: caId, ca } = await registerCaByApi(api, 'auth-only', { isAutoCaEnrollmentEnabled: true });
    const device = await issueClientCert(ca, { commonName: 'unbound-device' });
    expect((await enroll(device)).status).toBe(200);
    const identityId = (await identityOf(device.certPem))!;
    const { name } = await identityDetail(api, identityId);
    const authenticatorId = (
      await server.app.knex('authenticators').where({ identity_id: identityId }).first('id')
    ).id as string;
    const before = await identityCount();

    const deleted = await api.delete(`/authenticators/${authenticatorId}`);
    await expectShutOut(device);
    const list = await api.get(`/cas/${caId}/blocked-certificates`);

    expect(deleted.status).toBe(200);
    expect(await identityCount()).toBe(before);
    expect(list.body.data).toEqual([
      expect.objectContaining({
        caId,
        tbsSha256: certTbsSha256(device.certPem),
        identityId,
        identityName: name,
      }),
    ]);
    expect(auditEvents('certificate.blocked')).toContainEqual(
      expect.objectContaining({ caId, blockId: list.body.data[0].id, identityId }),
    );
  });

  test("a block is on its CA's list: another CA the certificate chains to decides by its own list", async () => {
    const { id: rootId, ca: root } = await registerCaByApi(api, 'per-ca-root');
    const intermediate = await generateSigningCa(root, { commonName: 'per-ca intermediate' });
    const interId = await registerVerifiedCa('per-ca-inter', intermediate);
    const leaf = await issueClientCert(intermediate, { commonName: 'two-cas' });
    const device = { ...leaf, certPem: leaf.certPem + intermediate.certPem };
    const autoEnroll = async (caId: string, on: boolean) =>
      expect((await api.patch(`/cas/${caId}`, { body: { isAutoCaEnrollmentEnabled: on } })).status).toBe(200);
    const deleteIdentity = async () =>
      expect((await api.delete(`/identities/${(await identityOf(leaf.certPem))!}`)).status).toBe(200);

    // Enrolled by the intermediate CA, then deleted: blocked on the intermediate's list only.
    await autoEnroll(interId, true);
    expect((await enroll(device)).status).toBe(200);
    await deleteIdentity();
    expect((await enroll(device)).status).toBe(401);

    await autoEnroll(interId, false);
    await autoEnroll(rootId, true);
    const byRoot = await enroll(device);
    expect(byRoot.status).toBe(200);
    await deleteIdentity();
    expect((await enroll(device)).status).toBe(401);
    const [rootEntry] = (await api.get(`/cas/${rootId}/blocked-certificates`)).body.data;

    expect((await api.delete(`/cas/${rootId}/blocked-certificates/${rootEntry.id}`)).status).toBe(200);
    const lifted = await enroll(device);

    expect(lifted.status).toBe(200);
    expect((await api.get(`/cas/${interId}/blocked-certificates`)).body.data).toEqual([
      expect.objectContaining({ tbsSha256: certTbsSha256(leaf.certPem) }),
    ]);
  });

  test('a blocked certificate cannot come back through a one-time token of its CA either; the token stays usable', async () => {
    const { id: caId, ca } = await registerCaByApi(api, 'ottca-block', {
      isAutoCaEnrollmentEnabled: true,
      isOttCaEnrollmentEnabled: true,
    });
    const device = await issueClientCert(ca, { commonName: 'ottca-device' });
    expect((await enroll(device)).status).toBe(200);
    expect((await api.delete(`/identities/${(await identityOf(device.certPem))!}`)).status).toBe(200);
    const pending = await pendingEnrollment(api, 'ottca-comeback', { ottca: caId });
    const ottca = (certPem?: string) =>
      asDevice(device, certPem).post(`${CLIENT}/enroll/ottca`, { body: { token: pending.token } });

    const refused = await ottca();
    const copy = await ottca(malleatedCopy(device.certPem));
    const other = await issueClientCert(ca, { commonName: 'ottca-other' });
    const fresh = await asDevice(other).post(`${CLIENT}/enroll/ottca`, { body: { token: pending.token } });

    for (const res of [refused, copy]) {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('CERTIFICATE_FAILED_VALIDATION');
    }
    expect(fresh.status).toBe(200);
    expect(await identityOf(other.certPem)).toBe(pending.identityId);
  });

  test('a one-time-token enrollment racing the deletion of its identity ends one way or the other, never in a 5xx', async () => {
    const { id: caId, ca } = await registerCaByApi(api, 'ottca-race', {
      isOttCaEnrollmentEnabled: true,
      isAutoCaEnrollmentEnabled: true,
    });
    const outcomes = new Set<string>();
    for (let trial = 0; trial < 30; trial++) {
      const pending = await pendingEnrollment(api, `ottca-race-${trial}`, { ottca: caId });
      const device = await issueClientCert(ca, { commonName: `ottca-race-${trial}` });
      const [enrolled, deleted] = await Promise.all([
        asDevice(device).post(`${CLIENT}/enroll/ottca`, { body: { token: pending.token } }),
        // Staggered by 0-40 ms: the window in which both transactions hold one row each.
        delay((trial % 5) * 10).then(() => api.delete(`/identities/${pending.identityId}`)),
      ]);
      outcomes.add(`${enrolled.status}/${deleted.status}`);
      expect(deleted.status).toBe(200);
      expect([200, 400]).toContain(enrolled.status);
      // Either way the identity is gone, and a certificate that did enroll is blocked at its CA.
      expect(await identityOf(device.certPem)).toBeUndefined();
      if (enrolled.status === 200) expect((await enroll(device)).status).toBe(401);
    }
    expect([...outcomes].every((o) => o === '200/200' || o === '400/200')).toBe(true);
  });

  /** Registers `ca` (any CA certificate, not only a root) and proves its key, as an admin would. */
  async function registerVerifiedCa(name: string, ca: KeyedCert): Promise<string> {
    const created = await api.post('/cas', { body: { name, certPem: ca.certPem } });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    const { verificationToken } = (await api.get(`/cas/${id}`)).body.data;
    const proof = await issueClientCert(ca, { commonName: verificationToken });
    const verified = await api.post(`/cas/${id}/verify`, {
      body: proof.certPem,
      headers: { 'content-type': 'text/plain' },
    });
    expect(verified.status).toBe(200);
    return id;
  }
});
