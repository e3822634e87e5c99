import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { certFingerprint } from '../../src/crypto/certificates.js';
import { generateRootCa, generateSigningCa, issueClientCert, type KeyedCert } from '../../src/crypto/pki.js';
import type { TestResponse } from '../helpers/https-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  createIdentity,
  identityDetail,
  managementApi,
  registerCaByApi,
  type ManagementApi,
} from '../identities/identity-fixtures.js';

describe('auto CA enrollment (POST /enroll?method=ca)', () => {
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  /** A CA with auto enrollment on, verified unless told otherwise. */
  const registeredCa = (name: string, body: Record<string, unknown> = {}, options?: { verified?: boolean }) =>
    registerCaByApi(api, name, { isAutoCaEnrollmentEnabled: true, ...body }, options);

  const withCert = (cert?: KeyedCert) =>
    cert ? server.newClient({ cert: cert.certPem, key: cert.keyPem }) : server.client;

  const enrollCa = (cert?: KeyedCert, body?: Record<string, unknown>) =>
    withCert(cert).post(`${CLIENT}/enroll?method=ca`, body ? { body } : {});

  const certLogin = (cert: KeyedCert) => withCert(cert).post(`${CLIENT}/authenticate?method=cert`);

  async function identityNamed(name: string) {
    const res = await api.get(`/identities?filter=${encodeURIComponent(`name = "${name}"`)}`);
    return res.body.data as { id: string; name: string }[];
  }

  const rowCounts = async () => {
    const knex = server.app.knex;
    const count = async (table: string) => Number((await knex(table).count({ n: '*' }))[0]!.n);
    return {
      identities: await count('identities'),
      authenticators: await count('authenticators'),
      roleAttributes: await count('identity_role_attributes'),
    };
  };

  function expectRefused(res: TestResponse) {
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ code: 'INVALID_AUTH', requestId: expect.any(String) });
  }

  test('a certificate of a verified auto-enrolling CA becomes an identity that logs in at once', async () => {
    const { id: caId, ca } = await registeredCa('factory', { identityRoles: ['sensors', 'east'] });
    const device = await issueClientCert(ca, { commonName: 'sensor-1' });

    const res = await enrollCa(device);

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: {}, meta: {} });
    const [found] = await identityNamed('factory-sensor-1');
    expect(found).toBeDefined();
    const detail = await identityDetail(api, found!.id);
    expect(detail).toMatchObject({
      name: 'factory-sensor-1',
      isAdmin: false,
      authPolicyId: 'default',
      authenticators: { cert: { id: expect.any(String), fingerprint: certFingerprint(device.certPem) } },
      enrollment: {},
    });
    expect([...detail.roleAttributes].sort()).toEqual(['east', 'sensors']);
    const stored = await server.app.knex('authenticators').where({ identity_id: found!.id }).first();
    expect(stored).toMatchObject({ method: 'cert', ca_id: caId, is_extendable: false });
    const login = await certLogin(device);
    expect(login.status).toBe(200);
    expect(login.body.data.identityId).toBe(found!.id);
  });

  test('the same certificate a second time is 409 naming the fingerprint, and nothing is added', async () => {
    const { ca } = await registeredCa('twice');
    const device = await issueClientCert(ca, { commonName: 'twice-device' });
    expect((await enrollCa(device)).status).toBe(200);
    const before = await rowCounts();

    const again = await enrollCa(device);

    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'CONFLICT', cause: { field: 'fingerprint' } });
    expect(await rowCounts()).toEqual(before);
  });

  test('parallel enrollments of one certificate create exactly one identity', async () => {
    const { ca } = await registeredCa('parallel', { identityRoles: ['p'] });
    const device = await issueClientCert(ca, { commonName: 'racer' });
    const before = await rowCounts();

    const results = await Promise.all([1, 2, 3, 4].map(() => enrollCa(device)));

    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    expect(await rowCounts()).toEqual({
      identities: before.identities + 1,
      authenticators: before.authenticators + 1,
      roleAttributes: before.roleAttributes + 1,
    });
  });

  test('parallel enrollments of certificates with one CN all succeed under distinct names', async () => {
    const { ca } = await registeredCa('crowd');
    const certs = await Promise.all([1, 2, 3].map(() => issueClientCert(ca, { commonName: 'twin' })));

    const results = await Promise.all(certs.map((c) => enrollCa(c)));

    expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
    const ids = await Promise.all(
      certs.map(async (c) => (await certLogin(c)).body.data.identityId as string),
    );
    const names = await Promise.all(ids.map(async (id) => (await identityDetail(api, id)).name as string));
    expect(names.sort()).toEqual(['crowd-twin', 'crowd-twin000001', 'crowd-twin000002']);
  });

  test('a failure at the last write of the transaction leaves no identity or role attributes behind', async () => {
    const { ca } = await registeredCa('atomic', { identityRoles: ['a', 'b'] });
    const device = await issueClientCert(ca, { commonName: 'half' });
    // A non-cert row holding the fingerprint: the up-front check (cert authenticators) misses it,
    // so only the unique constraint at the authenticator insert refuses, after the identity insert.
    const holder = await createIdentity(api, { name: 'fingerprint-holder', isAdmin: false });
    await server.app.knex('authenticators').insert({
      id: 'fingerprint-holder-updb',
      identity_id: holder,
      method: 'updb',
      username: 'fingerprint-holder',
      cert_fingerprint: certFingerprint(device.certPem),
    });
    const before = await rowCounts();

    const res = await enrollCa(device);

    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'CONFLICT', cause: { field: 'fingerprint' } });
    expect(await rowCounts()).toEqual(before);
    expect(await identityNamed('atomic-half')).toHaveLength(0);
  });

  test('a name taken by another identity gets the lowest free six-digit counter', async () => {
    const { ca } = await registeredCa('lab');
    const first = await issueClientCert(ca, { commonName: 'scope' });
    const second = await issueClientCert(ca, { commonName: 'scope' });
    const third = await issueClientCert(ca, { commonName: 'scope' });

    for (const cert of [first, second, third]) expect((await enrollCa(cert)).status).toBe(200);

    const names = await Promise.all(
      [first, second, third].map(async (cert) => (await certLogin(cert)).body.data.identityId as string),
    ).then((ids) => Promise.all(ids.map(async (id) => (await identityDetail(api, id)).name)));
    expect(names).toEqual(['lab-scope', 'lab-scope000001', 'lab-scope000002']);
  });

  test('identityNameFormat placeholders name the identity; the body name is [requestedName]', async () => {
    const { id: caId, ca } = await registeredCa('formats', {
      identityNameFormat: '[caId]/[commonName]/[requestedName]/[unknown]',
    });
    const detail = (await api.get(`/cas/${caId}`)).body.data;
    expect(detail.identityNameFormat).toBe('[caId]/[commonName]/[requestedName]/[unknown]');
    const asked = await issueClientCert(ca, { commonName: 'cam' });
    const unasked = await issueClientCert(ca, { commonName: 'mic' });

    const a = await withCert(asked).post(`${CLIENT}/enroll/ca`, { body: { name: 'front-door' } });
    const b = await enrollCa(unasked);

    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(await identityNamed(`${caId}/cam/front-door/[unknown]`)).toHaveLength(1);
    expect(await identityNamed(`${caId}/mic/mic/[unknown]`)).toHaveLength(1);
  });

  test('[identityId] is the id of the identity created', async () => {
    const { ca } = await registeredCa('by-id', { identityNameFormat: 'dev-[identityId]' });
    const device = await issueClientCert(ca, { commonName: 'x' });

    expect((await enrollCa(device)).status).toBe(200);

    const id = (await certLogin(device)).body.data.identityId as string;
    expect((await identityDetail(api, id)).name).toBe(`dev-${id}`);
  });

  test('a certificate of an intermediate under the CA, sent with its chain, enrolls', async () => {
    const { ca } = await registeredCa('chained');
    const intermediate = await generateSigningCa(ca, { commonName: 'chained intermediate' });
    const leaf = await issueClientCert(intermediate, { commonName: 'deep' });
    const withChain = { ...leaf, certPem: leaf.certPem + intermediate.certPem };

    expect((await enrollCa(withChain)).status).toBe(200);
    expect(await identityNamed('chained-deep')).toHaveLength(1);
  });

  test('an unverified CA, a CA without auto enrollment, an unknown CA or no certificate is 401, leaving no rows', async () => {
    const unverified = await registeredCa('unverified', {}, { verified: false });
    const flagOff = await registeredCa('flag-off', { isAutoCaEnrollmentEnabled: false });
    const stranger = await generateRootCa({ commonName: 'stranger root' });
    const certs = [
      await issueClientCert(unverified.ca, { commonName: 'u' }),
      await issueClientCert(flagOff.ca, { commonName: 'f' }),
      await issueClientCert(stranger, { commonName: 's' }),
    ];
    const before = await rowCounts();

    const attempts = [...(await Promise.all(certs.map((c) => enrollCa(c)))), await enrollCa()];

    for (const res of attempts) expectRefused(res);
    expect(await rowCounts()).toEqual(before);
    for (const cert of certs) expectRefused(await certLogin(cert));
  });

  test('an expired certificate or a CA certificate of the CA is 401', async () => {
    const { ca } = await registeredCa('strict');
    const past = new Date(Date.now() - 86_400_000);
    const expired = await issueClientCert(ca, {
      commonName: 'old',
      notBefore: new Date(past.getTime() - 86_400_000),
      notAfter: past,
    });
    const subCa = await generateSigningCa(ca, { commonName: 'sub ca' });

    expectRefused(await enrollCa(expired));
    expectRefused(await enrollCa(subCa));
    expect(await identityNamed('strict-old')).toHaveLength(0);
  });

  test('turning auto enrollment off stops enrollment; a PUT restores the default name format', async () => {
    const { id, ca } = await registeredCa('toggled', { identityNameFormat: 'x-[commonName]' });
    const patched = await api.patch(`/cas/${id}`, { body: { isAutoCaEnrollmentEnabled: false } });
    expect(patched.status).toBe(200);

    expectRefused(await enrollCa(await issueClientCert(ca, { commonName: 'late' })));

    const put = await api.put(`/cas/${id}`, { body: { name: 'toggled', isAutoCaEnrollmentEnabled: true } });
    expect(put.status).toBe(200);
    expect((await api.get(`/cas/${id}`)).body.data.identityNameFormat).toBe('[caName]-[commonName]');
    expect((await enrollCa(await issueClientCert(ca, { commonName: 'late' }))).status).toBe(200);
    expect(await identityNamed('toggled-late')).toHaveLength(1);
  });

  test('a name with NUL, an escape sequence, a line break, C1 or bidi controls is 400 on field name, leaving no rows', async () => {
    const { ca } = await registeredCa('hostile-cn');
    const nul = await issueClientCert(ca, { commonName: 'ad\u0000min' });
    const escape = await issueClientCert(ca, { commonName: 'a\u001b[31mred' });
    // An 8-bit CSI and a right-to-left override: a device must not choose a name that drives or
    // disguises itself on the admin's terminal.
    const csi = await issueClientCert(ca, { commonName: 'a\u009b31mred' });
    const rtl = await issueClientCert(ca, { commonName: 'dev\u202egnp.exe' });
    const asked = await issueClientCert(ca, { commonName: 'fine' });
    const before = await rowCounts();

    const responses = [
      await enrollCa(nul),
      await enrollCa(escape),
      await enrollCa(csi),
      await enrollCa(rtl),
      await enrollCa(asked, { name: 'zz\rtrusted-sensor' }),
      await enrollCa(asked, { name: 'zz\u0085next' }),
    ];

    for (const res of responses) {
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'name' } });
    }
    expect(await rowCounts()).toEqual(before);
  });

  test('a common name over the length limit is refused by its length, trailing spaces counted, leaving no rows', async () => {
    const { ca } = await registeredCa('long-cn');
    // A long run of spaces inside and after: fits once trimmed, but is measured as sent.
    const padded = await issueClientCert(ca, { commonName: `pad${' '.repeat(300)}` });
    const inner = await issueClientCert(ca, { commonName: `a${' '.repeat(3000)}b` });
    const before = await rowCounts();
    for (const cert of [padded, inner]) {
      const res = await enrollCa(cert);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'name' } });
    }
    expect(await rowCounts()).toEqual(before);
  });

  test('a common name or requested name with invisible characters is 400 on field name; a Persian ZWNJ enrolls', async () => {
    const { ca } = await registeredCa('invisible-cn', { identityNameFormat: '[caName]-[requestedName]' });
    const zeroWidth = await issueClientCert(ca, { commonName: '\u200balice' });
    const tagged = await issueClientCert(ca, { commonName: 'alice\u{E0041}' });
    const asked = await issueClientCert(ca, { commonName: 'asked' });
    const before = await rowCounts();

    for (const res of [
      await enrollCa(zeroWidth),
      await enrollCa(tagged),
      await enrollCa(asked, { name: 'al\u00adice' }),
      await enrollCa(asked, { name: 'ali\u200cce' }),
    ]) {
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'name' } });
    }
    expect(await rowCounts()).toEqual(before);

    const persian = await issueClientCert(ca, {
      commonName: '\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645',
    });
    expect((await enrollCa(persian)).status).toBe(200);
  });

  test('a byte order mark (U+FEFF) at either end of a common name is refused, not trimmed away', async () => {
    const { ca } = await registeredCa('bom-cn', { identityNameFormat: '[commonName]' });
    const before = await rowCounts();

    for (const commonName of ['\ufeffbom-device', 'bom-device\ufeff']) {
      const res = await enrollCa(await issueClientCert(ca, { commonName }));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'name' } });
    }
    expect(await rowCounts()).toEqual(before);
    expect(await identityNamed('bom-device')).toHaveLength(0);
  });

  test('the generic form takes only method=ca', async () => {
    const { ca } = await registeredCa('generic');
    const device = await issueClientCert(ca, { commonName: 'g' });

    const res = await withCert(device).post(`${CLIENT}/enroll?method=ott`);

    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'method' } });
    expect(await identityNamed('generic-g')).toHaveLength(0);
  });
});
