import { afterAll, describe, expect, test } from '@jest/globals';
import type { Knex } from 'knex';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { certFingerprint, certTbsSha256 } from '../../src/crypto/certificates.js';
import { issueClientCert, type KeyedCert } from '../../src/crypto/pki.js';
import { newId } from '../../src/crypto/random.js';
import { malleatedCopy } from '../helpers/hostile-certificates.js';
import { createTestDatabaseUrl } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { CLIENT, createIdentity, managementApi, registerCaByApi } from '../identities/identity-fixtures.js';

/**
 * Cert authenticators written before migration 012 get their tbsCertificate hash at upgrade,
 * computed from the stored PEMs; two stored copies of one certificate do not stop the upgrade.
 */
describe('cert authenticators stored before the tbsCertificate hash are filled at upgrade', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-migrate-tbs-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('every stored certificate gets its hash, the oldest of two copies keeps it, and copies stay one identity', async () => {
    const db = await createTestDatabaseUrl();
    const options = { dataDir, databaseUrl: db?.url };
    let device: KeyedCert;
    let twin: KeyedCert;
    let twinCopy: string;
    const first = await startTestServer(options);
    try {
      const api = managementApi(first, await first.adminToken());
      const { id: caId, ca } = await registerCaByApi(api, 'upgraded', { isAutoCaEnrollmentEnabled: true });
      device = await issueClientCert(ca, { commonName: 'old-device' });
      twin = await issueClientCert(ca, { commonName: 'twin-device' });
      twinCopy = malleatedCopy(twin.certPem);
      for (const cert of [device, twin]) {
        const res = await first
          .newClient({ cert: cert.certPem, key: cert.keyPem })
          .post(`${CLIENT}/enroll?method=ca`);
        expect(res.status).toBe(200);
      }
      // What the old code let happen: a re-encoded copy enrolled as a second identity.
      await downgrade(first.app.knex);
      const second = await createIdentity(api, { name: 'twin-copy', isAdmin: false });
      await first.app.knex('authenticators').insert({
        id: newId(),
        identity_id: second,
        method: 'cert',
        cert_fingerprint: certFingerprint(twinCopy),
        cert_pem: twinCopy,
        ca_id: caId,
        created_at: new Date(Date.now() + 1000),
      });
    } finally {
      await first.close();
    }

    const upgraded = await startTestServer(options);
    try {
      const rows = await upgraded.app.knex('authenticators').where({ method: 'cert' });
      const byFingerprint = (pem: string) => rows.find((r) => r.cert_fingerprint === certFingerprint(pem));
      const copyEnroll = await clientOf(upgraded, device!, malleatedCopy(device!.certPem)).post(
        `${CLIENT}/enroll?method=ca`,
      );
      const copyLogin = await clientOf(upgraded, device!, malleatedCopy(device!.certPem)).post(
        `${CLIENT}/authenticate?method=cert`,
      );
      const twinLogin = await clientOf(upgraded, twin!, twinCopy!).post(`${CLIENT}/authenticate?method=cert`);

      expect(byFingerprint(device!.certPem)?.cert_tbs_sha256).toBe(certTbsSha256(device!.certPem));
      expect(byFingerprint(twin!.certPem)?.cert_tbs_sha256).toBe(certTbsSha256(twin!.certPem));
      expect(byFingerprint(twinCopy!)?.cert_tbs_sha256).toBeNull();
      expect(copyEnroll.status).toBe(409);
      expect(copyLogin.status).toBe(200);
      expect(copyLogin.body.data.identityId).toBe(byFingerprint(device!.certPem)?.identity_id);
      // The later copy still logs in by its exact DER, as before the upgrade.
      expect(twinLogin.body.data.identityId).toBe(byFingerprint(twinCopy!)?.identity_id);
      expect(await upgraded.app.knex.schema.hasTable('blocked_certificates')).toBe(true);
    } finally {
      await upgraded.close();
      await db?.drop();
    }
  });
});

const clientOf = (server: TestServer, device: KeyedCert, certPem: string) =>
  server.newClient({ cert: certPem, key: device.keyPem });

/** The schema as it was before migration 012. */
async function downgrade(knex: Knex): Promise<void> {
  await knex.schema.dropTable('blocked_certificates');
  await knex.schema.alterTable('authenticators', (t) => {
    t.dropUnique(['cert_tbs_sha256'], 'authenticators__cert_tbs_sha256_unique');
    t.dropColumn('cert_tbs_sha256');
  });
  await knex('knex_migrations').where({ name: '012_certificate_identity' }).delete();
}
