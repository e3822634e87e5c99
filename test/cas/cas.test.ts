import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { certFingerprint } from '../../src/crypto/certificates.js';
import { generateRootCa, generateSigningCa, issueClientCert, type KeyedCert } from '../../src/crypto/pki.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';

describe('3rd-party CAs', () => {
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  async function createCa(name: string, ca: KeyedCert, extra: Record<string, unknown> = {}) {
    const res = await api.post('/cas', { body: { name, certPem: ca.certPem, ...extra } });
    if (res.status !== 201) throw new Error(`CA create failed: ${res.status} ${res.text}`);
    const detail = (await api.get(`/cas/${res.body.data.id}`)).body.data;
    return { id: res.body.data.id as string, detail };
  }

  const verify = (id: string, pem: string, contentType = 'text/plain') =>
    api.post(`/cas/${id}/verify`, { body: pem, headers: { 'content-type': contentType } });

  test('a CA is created unverified, with its fingerprint and a random verification token', async () => {
    const ca = await generateRootCa({ commonName: 'Created CA' });

    const { id, detail } = await createCa('created', ca);

    expect(detail).toMatchObject({
      id,
      name: 'created',
      fingerprint: certFingerprint(ca.certPem),
      isAuthEnabled: true,
      isOttCaEnrollmentEnabled: true,
      isAutoCaEnrollmentEnabled: false,
      identityRoles: [],
      isVerified: false,
    });
    expect(detail.verificationToken).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const other = await createCa('created-2', await generateRootCa({ commonName: 'Other CA' }));
    expect(other.detail.verificationToken).not.toBe(detail.verificationToken);
  });

  test('a certificate signed by the CA with the verification token as CN verifies it', async () => {
    const ca = await generateRootCa({ commonName: 'Verified CA' });
    const { id, detail } = await createCa('verified', ca);
    const proof = await issueClientCert(ca, { commonName: detail.verificationToken });

    const res = await verify(id, proof.certPem);

    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id, isVerified: true });
    expect((await api.get(`/cas/${id}`)).body.data.isVerified).toBe(true);
  });

  test('verification also takes application/x-pem-file, and a second one is a conflict', async () => {
    const ca = await generateRootCa({ commonName: 'Pem File CA' });
    const { id, detail } = await createCa('pem-file', ca);
    const proof = await issueClientCert(ca, { commonName: detail.verificationToken });

    const first = await verify(id, proof.certPem, 'application/x-pem-file');
    const second = await verify(id, proof.certPem, 'application/x-pem-file');

    expect(first.status).toBe(200);
    expect(second.status).toBe(409);
  });

  test('a wrong CN, another signer, an expired proof or no certificate leave the CA unverified', async () => {
    const ca = await generateRootCa({ commonName: 'Strict CA' });
    const stranger = await generateRootCa({ commonName: 'Stranger CA' });
    const { id, detail } = await createCa('strict', ca);
    const token = detail.verificationToken as string;
    const past = new Date(Date.now() - 86_400_000);

    const attempts = [
      await verify(id, (await issueClientCert(ca, { commonName: `${token}x` })).certPem),
      await verify(id, (await issueClientCert(stranger, { commonName: token })).certPem),
      await verify(id, (await issueClientCert(ca, { commonName: token, notAfter: past })).certPem),
      await verify(id, 'not a certificate'),
      await verify(id, ''),
    ];

    for (const res of attempts) {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('COULD_NOT_VALIDATE');
    }
    expect((await api.get(`/cas/${id}`)).body.data.isVerified).toBe(false);
  });

  test('a body of BEGIN lines or of many certificates is a 400 at once, and the server keeps answering', async () => {
    const ca = await generateRootCa({ commonName: 'Flooded CA' });
    const { id, detail } = await createCa('flooded', ca);
    const proof = await issueClientCert(ca, { commonName: detail.verificationToken });
    const marker = '-----BEGIN CERTIFICATE-----';
    const bodies = [
      marker.repeat(Math.ceil((256 * 1024) / marker.length)),
      marker.repeat(Math.floor((1024 * 1024 - 1024) / marker.length)), // just under the body limit
      proof.certPem.repeat(17), // more blocks than a bundle may hold
    ];

    for (const body of bodies) {
      const started = performance.now();
      const [res, live] = await Promise.all([verify(id, body), server.client.get('/health/live')]);
      const elapsed = performance.now() - started;

      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'body', reason: 'must hold exactly one PEM certificate' },
      });
      expect(live.status).toBe(200);
      // Generous: milliseconds here, where a backtracking PEM regex took seconds per request.
      expect(elapsed).toBeLessThan(3000);
    }
    expect((await api.get(`/cas/${id}`)).body.data.isVerified).toBe(false);
  });

  test('a JSON verification body is 415', async () => {
    const ca = await generateRootCa({ commonName: 'Json CA' });
    const { id } = await createCa('json-verify', ca);

    const res = await api.post(`/cas/${id}/verify`, { body: { certificate: 'x' } });

    expect(res.status).toBe(415);
  });

  test.each([
    [{ certPem: 'x' }, 'name'],
    [{ name: 'no-cert' }, 'certPem'],
    [{ name: 'bad-cert', certPem: 'not a certificate' }, 'certPem'],
    [{ name: 'bad-flag', certPem: 'A CA', isAuthEnabled: 'maybe' }, 'isAuthEnabled'],
    [{ name: 'bad-roles', certPem: 'A CA', identityRoles: [1] }, 'identityRoles'],
  ])('a bad create body %j is refused naming %s', async (body: Record<string, unknown>, field) => {
    const ca = await generateRootCa({ commonName: `Valid CA for ${field}` });
    const withCa = { ...body, ...(body.certPem === 'A CA' ? { certPem: ca.certPem } : {}) };

    const res = await api.post('/cas', { body: withCa });

    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } });
  });

  test('a certificate that is not a CA certificate is refused naming certPem', async () => {
    const leaf = await issueClientCert(await generateRootCa({ commonName: 'Leaf only' }), {
      commonName: 'leaf',
    });

    const res = await api.post('/cas', { body: { name: 'leaf-as-ca', certPem: leaf.certPem } });

    expect(res.status).toBe(400);
    expect(res.body.error.cause).toMatchObject({ field: 'certPem' });
  });

  test('an intermediate CA certificate is accepted', async () => {
    const root = await generateRootCa({ commonName: 'Some Root' });
    const intermediate = await generateSigningCa(root, { commonName: 'Some Intermediate' });

    const res = await api.post('/cas', { body: { name: 'intermediate', certPem: intermediate.certPem } });

    expect(res.status).toBe(201);
  });

  test('the same CA certificate or name twice is 409', async () => {
    const ca = await generateRootCa({ commonName: 'Twice CA' });
    await createCa('twice', ca);

    const sameCert = await api.post('/cas', { body: { name: 'twice-2', certPem: ca.certPem } });
    const sameName = await api.post('/cas', {
      body: { name: 'twice', certPem: (await generateRootCa({ commonName: 'Another' })).certPem },
    });

    expect(sameCert.status).toBe(409);
    expect(sameCert.body.error.cause.field).toBe('certPem');
    expect(sameName.status).toBe(409);
    expect(sameName.body.error.cause.field).toBe('name');
  });

  test('PATCH and PUT change the flags but never the certificate', async () => {
    const ca = await generateRootCa({ commonName: 'Flags CA' });
    const { id } = await createCa('flags', ca);

    const patch = await api.patch(`/cas/${id}`, {
      body: { isAuthEnabled: false, identityRoles: ['a', 'b'] },
    });
    const afterPatch = (await api.get(`/cas/${id}`)).body.data;
    const put = await api.put(`/cas/${id}`, { body: { name: 'flags-put', certPem: ca.certPem } });
    const afterPut = (await api.get(`/cas/${id}`)).body.data;
    const otherCert = (await generateRootCa({ commonName: 'Swap' })).certPem;
    const swap = await api.patch(`/cas/${id}`, { body: { certPem: otherCert } });

    expect(patch.status).toBe(200);
    expect(afterPatch).toMatchObject({ isAuthEnabled: false, identityRoles: ['a', 'b'], name: 'flags' });
    expect(put.status).toBe(200);
    expect(afterPut).toMatchObject({ name: 'flags-put', isAuthEnabled: true, identityRoles: [] });
    expect(swap.status).toBe(400);
    expect(swap.body.error.cause.field).toBe('certPem');
    expect((await api.get(`/cas/${id}`)).body.data.fingerprint).toBe(certFingerprint(ca.certPem));
  });

  test('list, filter and delete', async () => {
    const { id } = await createCa('to-delete', await generateRootCa({ commonName: 'Delete CA' }));

    const listed = await api.get(`/cas?filter=${encodeURIComponent('name = "to-delete"')}`);
    const deleted = await api.delete(`/cas/${id}`);
    const again = await api.delete(`/cas/${id}`);

    expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([id]);
    expect(deleted.status).toBe(200);
    expect(again.status).toBe(404);
    expect((await api.get(`/cas/${id}`)).status).toBe(404);
  });
});
