import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { certFingerprint } from '../../src/crypto/certificates.js';
import {
  generateClientKeyAndCsr,
  generateRootCa,
  issueClientCert,
  type KeyedCert,
} from '../../src/crypto/pki.js';
import { newId } from '../../src/crypto/random.js';
import { authenticatorsRepository } from '../../src/repositories/authenticators-repository.js';
import { selfIssuedChain } from '../helpers/self-issued-chain.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  createIdentity,
  identityDetail,
  managementApi,
  registerCaByApi,
  type ManagementApi,
} from '../identities/identity-fixtures.js';

const DAY = 86_400_000;

describe('legacy login with a client certificate (method=cert)', () => {
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  const certLogin = (cert?: KeyedCert) =>
    (cert ? server.newClient({ cert: cert.certPem, key: cert.keyPem }) : server.client).post(
      `${CLIENT}/authenticate?method=cert`,
    );

  /** An identity enrolled through the OTT route: key and CSR made here, certificate from our PKI. */
  async function ottEnrolled(name: string, extra: Record<string, unknown> = {}) {
    const id = await createIdentity(api, { name, isAdmin: false, enrollment: { ott: true }, ...extra });
    const { token } = (await identityDetail(api, id)).enrollment.ott;
    const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: name });
    const res = await server.client.post(`${CLIENT}/enroll/ott`, { body: { token, clientCsr: csrPem } });
    if (res.status !== 200) throw new Error(`OTT enroll failed: ${res.status} ${res.text}`);
    return { id, cert: { certPem: res.body.data.cert as string, keyPem } };
  }

  /** An identity whose `cert` authenticator is the given certificate (Arrange by row). */
  async function withCertAuthenticator(name: string, cert: KeyedCert, caId: string | null, extra = {}) {
    const id = await createIdentity(api, { name, isAdmin: false, ...extra });
    await authenticatorsRepository.insert(server.app.knex, {
      id: newId(),
      identityId: id,
      method: 'cert',
      certFingerprint: certFingerprint(cert.certPem),
      certPem: cert.certPem,
      caId,
      isExtendable: caId === null,
    });
    return id;
  }

  const registeredCa = (name: string, verified: boolean) => registerCaByApi(api, name, {}, { verified });

  const expectRefused = (res: { status: number; body: any }) => {
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_AUTH');
  };

  test('a certificate enrolled through OTT logs in; the session is extendable and its amr is cert', async () => {
    const { id, cert } = await ottEnrolled('ott-cert-user');

    const res = await certLogin(cert);

    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ identityId: id, identity: { name: 'ott-cert-user' } });
    const session = await server.client.get(`${CLIENT}/current-api-session`, {
      headers: { 'svc-session': res.body.data.token },
    });
    expect(session.body.data).toMatchObject({ identityId: id, amr: ['cert'], isCertExtendable: true });
  });

  test('the management API accepts the same certificate login', async () => {
    const { cert } = await ottEnrolled('ott-mgmt-user');

    const res = await server
      .newClient({ cert: cert.certPem, key: cert.keyPem })
      .post('/edge/management/v1/authenticate?method=cert');

    expect(res.status).toBe(200);
  });

  test('a certificate of a verified, auth-enabled 3rd-party CA enrolled through OTTCA logs in, not extendable', async () => {
    const { id: caId, ca } = await registeredCa('third-party', true);
    const identityId = await createIdentity(api, {
      name: 'ottca-user',
      isAdmin: false,
      enrollment: { ottca: caId },
    });
    const { token } = (await identityDetail(api, identityId)).enrollment.ottca;
    const cert = await issueClientCert(ca, { commonName: 'ottca-user' });
    const enrolled = await server
      .newClient({ cert: cert.certPem, key: cert.keyPem })
      .post(`${CLIENT}/enroll/ottca`, { body: { token } });
    expect(enrolled.status).toBe(200);

    const res = await certLogin(cert);

    expect(res.status).toBe(200);
    expect(res.body.data.identityId).toBe(identityId);
    const session = await server.client.get(`${CLIENT}/current-api-session`, {
      headers: { 'svc-session': res.body.data.token },
    });
    expect(session.body.data).toMatchObject({ amr: ['cert'], isCertExtendable: false });
  });

  test('a certificate of an unverified CA authenticates nobody, even with an authenticator', async () => {
    const { id: caId, ca } = await registeredCa('unverified', false);
    const cert = await issueClientCert(ca, { commonName: 'unverified-user' });
    await withCertAuthenticator('unverified-ca-user', cert, caId);

    expectRefused(await certLogin(cert));
  });

  test('turning authentication off on a CA stops its certificates; turning it on again restores them', async () => {
    const { id: caId, ca } = await registeredCa('toggled', true);
    const cert = await issueClientCert(ca, { commonName: 'toggled-user' });
    await withCertAuthenticator('toggled-ca-user', cert, caId);
    expect((await certLogin(cert)).status).toBe(200);

    await api.patch(`/cas/${caId}`, { body: { isAuthEnabled: false } });
    const whileOff = await certLogin(cert);
    await api.patch(`/cas/${caId}`, { body: { isAuthEnabled: true } });

    expectRefused(whileOff);
    expect((await certLogin(cert)).status).toBe(200);
  });

  test('an expired certificate is refused unless the policy allows expired certificates', async () => {
    const expired = await issueClientCert(server.app.pki.signingCa, {
      commonName: 'expired-user',
      notBefore: new Date(Date.now() - 30 * DAY),
      notAfter: new Date(Date.now() - DAY),
    });
    const identityId = await withCertAuthenticator('expired-user', expired, null);
    const refused = await certLogin(expired);
    const policy = await api.post('/auth-policies', {
      body: { name: 'expired-ok', primary: { cert: { allowExpiredCerts: true } } },
    });
    await api.patch(`/identities/${identityId}`, { body: { authPolicyId: policy.body.data.id } });

    const accepted = await certLogin(expired);

    expectRefused(refused);
    expect(accepted.status).toBe(200);
  });

  test('a policy that does not allow certificates refuses them', async () => {
    const policy = await api.post('/auth-policies', {
      body: { name: 'no-cert', primary: { cert: { allowed: false } } },
    });
    const { cert } = await ottEnrolled('no-cert-user', { authPolicyId: policy.body.data.id });

    expectRefused(await certLogin(cert));
  });

  test('a disabled identity is refused', async () => {
    const { id, cert } = await ottEnrolled('disabled-cert-user');
    await api.post(`/identities/${id}/disable`, { body: { durationMinutes: 0 } });

    expectRefused(await certLogin(cert));
  });

  test('no certificate, an unenrolled certificate of our PKI, and a stranger certificate are refused alike', async () => {
    const unenrolled = await issueClientCert(server.app.pki.signingCa, { commonName: 'nobody' });
    const strangerCa = await generateRootCa({ commonName: 'Stranger' });
    const stranger = await issueClientCert(strangerCa, { commonName: 'stranger' });
    await withCertAuthenticator('stranger-user', stranger, null);

    const results = [await certLogin(), await certLogin(unenrolled), await certLogin(stranger)];

    for (const res of results) expectRefused(res);
    const strip = (b: any) => ({ ...b, error: { ...b.error, requestId: undefined } });
    expect(new Set(results.map((r) => JSON.stringify(strip(r.body)))).size).toBe(1);
  });

  test('a leaf sent with 9 self-issued intermediates is refused while the server keeps answering', async () => {
    // Every intermediate shares the name and key of the others, so each one verifies as the issuer
    // of every other: 9! orderings for a builder that tries them all.
    const { leaf, intermediates } = await selfIssuedChain(9, 'Crafted CA');
    await withCertAuthenticator('crafted-chain-user', leaf, null);
    const crafted = server.newClient({ cert: leaf.certPem + intermediates.join(''), key: leaf.keyPem });

    let settled = false;
    const login = crafted.post(`${CLIENT}/authenticate?method=cert`).finally(() => {
      settled = true;
    });
    const liveTimes: number[] = [];
    do {
      const started = performance.now();
      expect((await server.client.get('/health/live')).status).toBe(200);
      liveTimes.push(performance.now() - started);
    } while (!settled);

    expectRefused(await login);
    // Generous: a probe takes milliseconds; trying orderings blocked the event loop for minutes.
    expect(Math.max(...liveTimes)).toBeLessThan(2000);
  });
});
