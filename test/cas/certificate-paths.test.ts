import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { certFingerprint, certTbsSha256 } from '../../src/crypto/certificates.js';
import { generateSigningCa, issueClientCert, type KeyedCert } from '../../src/crypto/pki.js';
import { newId } from '../../src/crypto/random.js';
import { authenticatorsRepository } from '../../src/repositories/authenticators-repository.js';
import {
  leafUnderExpiredIntermediate,
  noEkuLeaf,
  serverAuthOnlyLeaf,
} from '../helpers/hostile-certificates.js';
import { createTestDatabaseUrl, usingPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  createIdentity,
  managementApi,
  pendingEnrollment,
  registerCaByApi,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import type { TestResponse } from '../helpers/https-client.js';

/**
 * RFC 5280 §6.1.3 (a)(2) on every certificate of a client's path, and the leaf's key purpose
 * (§4.2.1.12), wherever a client certificate authenticates (docs/operations.md "Client
 * certificates").
 */
describe(`client certificate paths (${usingPostgres ? 'PostgreSQL' : 'PGlite'})`, () => {
  let server: TestServer;
  let api: ManagementApi;
  let caId: string;
  let ca: KeyedCert;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    ({ id: caId, ca } = await registerCaByApi(api, 'paths', {
      isAutoCaEnrollmentEnabled: true,
      isOttCaEnrollmentEnabled: true,
    }));
  });
  afterAll(() => server.close());

  const asDevice = (device: KeyedCert, chainPem = device.certPem) =>
    server.newClient({ cert: chainPem, key: device.keyPem });
  const enroll = (device: KeyedCert, chainPem?: string) =>
    asDevice(device, chainPem).post(`${CLIENT}/enroll?method=ca`);
  const certLogin = (device: KeyedCert, chainPem?: string) =>
    asDevice(device, chainPem).post(`${CLIENT}/authenticate?method=cert`);

  /** The cert authenticator an older version could have written for `device`. */
  async function enrolledEarlier(name: string, device: KeyedCert, extra = {}): Promise<string> {
    const id = await createIdentity(api, { name, isAdmin: false, ...extra });
    await authenticatorsRepository.insert(server.app.knex, {
      id: newId(),
      identityId: id,
      method: 'cert',
      certFingerprint: certFingerprint(device.certPem),
      certTbsSha256: certTbsSha256(device.certPem),
      certPem: device.certPem,
      caId,
    });
    return id;
  }

  function expectRefused(res: TestResponse) {
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('INVALID_AUTH');
  }

  test('a fresh leaf under an intermediate that expired yesterday neither enrolls nor logs in', async () => {
    const { leaf, chainPem } = await leafUnderExpiredIntermediate(ca, 'under-retired');
    const policy = await api.post('/auth-policies', {
      body: { name: 'expired-leaf-ok', primary: { cert: { allowExpiredCerts: true } } },
    });
    await enrolledEarlier('under-retired', leaf, { authPolicyId: policy.body.data.id });

    const current = await generateSigningCa(ca, { commonName: 'current sub-CA' });
    const underCurrent = await issueClientCert(current, { commonName: 'under-current' });

    // allowExpiredCerts excuses the leaf only, never an issuer.
    expectRefused(await enroll(leaf, chainPem));
    expectRefused(await certLogin(leaf, chainPem));
    // The same shape of chain through a sub-CA still in date is accepted.
    expect((await enroll(underCurrent, underCurrent.certPem + current.certPem)).status).toBe(200);
  });

  test('a leaf whose extendedKeyUsage is serverAuth only is no client certificate', async () => {
    const web = await serverAuthOnlyLeaf(ca, 'web-server');
    const webTwo = await serverAuthOnlyLeaf(ca, 'web-server-2');
    await enrolledEarlier('web-server-earlier', webTwo);
    const pending = await pendingEnrollment(api, 'ottca-web', { ottca: caId });

    const enrolled = await enroll(web);
    const login = await certLogin(webTwo);
    const ottca = await asDevice(web).post(`${CLIENT}/enroll/ottca`, { body: { token: pending.token } });

    expectRefused(enrolled);
    expectRefused(login);
    expect(ottca.status).toBe(400);
    expect(ottca.body.error.code).toBe('CERTIFICATE_FAILED_VALIDATION');
  });

  test('a clientAuth leaf and a leaf without extendedKeyUsage enroll and log in', async () => {
    const client = await issueClientCert(ca, { commonName: 'client-auth' });
    const anyPurpose = await noEkuLeaf(ca, 'no-eku');

    for (const device of [client, anyPurpose]) {
      expect((await enroll(device)).status).toBe(200);
      expect((await certLogin(device)).status).toBe(200);
    }
  });

  test('a CA is verified by a proof certificate whose extendedKeyUsage is serverAuth only', async () => {
    const { id, ca: other } = await registerCaByApi(api, 'server-proof', {}, { verified: false });
    const { verificationToken } = (await api.get(`/cas/${id}`)).body.data;
    const proof = await serverAuthOnlyLeaf(other, verificationToken);

    const res = await api.post(`/cas/${id}/verify`, {
      body: proof.certPem,
      headers: { 'content-type': 'text/plain' },
    });

    expect(res.status).toBe(200);
    expect(res.body.data.isVerified).toBe(true);
  });
});

describe(`the warning at start (${usingPostgres ? 'PostgreSQL' : 'PGlite'})`, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-cert-rules-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('counts the enrolled certificates the rules now refuse, in one line', async () => {
    const db = await createTestDatabaseUrl();
    const options = { dataDir, databaseUrl: db?.url };
    const first = await startTestServer(options);
    try {
      const api = managementApi(first, await first.adminToken());
      const { id: caId, ca } = await registerCaByApi(api, 'warned', { isAutoCaEnrollmentEnabled: true });
      expect((await first.newClient(await pair(ca, 'fine')).post(`${CLIENT}/enroll?method=ca`)).status).toBe(
        200,
      );
      for (const name of ['web-1', 'web-2']) {
        const web = await serverAuthOnlyLeaf(ca, name);
        const id = await createIdentity(api, { name, isAdmin: false });
        await authenticatorsRepository.insert(first.app.knex, {
          id: newId(),
          identityId: id,
          method: 'cert',
          certFingerprint: certFingerprint(web.certPem),
          certPem: web.certPem,
          caId,
        });
      }
    } finally {
      await first.close();
    }

    const lines: Record<string, any>[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const second = await startTestServer({ ...options, logger });
    await second.close();
    await db?.drop();

    const warnings = lines.filter((l) => l.certificates !== undefined);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, certificates: 2 });
    expect(warnings[0]!.msg).toContain('clientAuth');
  });
});

const pair = async (ca: KeyedCert, cn: string) => {
  const device = await issueClientCert(ca, { commonName: cn });
  return { cert: device.certPem, key: device.keyPem };
};
