import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { certFingerprint } from '../../src/crypto/certificates.js';
import { issueClientCert } from '../../src/crypto/pki.js';
import { managementApi, registerCaByApi } from '../identities/identity-fixtures.js';
import { startCliFixture, type CliFixture } from './cli-fixture.js';

describe('svc edge list blocked-certificates and svc edge delete blocked-certificate', () => {
  let fixture: CliFixture;
  let caId: string;
  let fingerprint: string;
  beforeAll(async () => {
    fixture = await startCliFixture();
    const { server } = fixture;
    const api = managementApi(server, await server.adminToken());
    const registered = await registerCaByApi(api, 'cli-factory', { isAutoCaEnrollmentEnabled: true });
    caId = registered.id;
    const device = await issueClientCert(registered.ca, { commonName: 'cli-sensor' });
    fingerprint = certFingerprint(device.certPem);
    const asDevice = server.newClient({ cert: device.certPem, key: device.keyPem });
    expect((await asDevice.post('/edge/client/v1/enroll?method=ca')).status).toBe(200);
    expect((await fixture.svc(['edge', 'delete', 'identity', 'cli-factory-cli-sensor'])).code).toBe(0);
  });
  afterAll(() => fixture.close());

  test('list by CA name shows the entry; delete by CA id lifts it; the list is then empty', async () => {
    const table = await fixture.svc(['edge', 'list', 'blocked-certificates', 'cli-factory']);
    const json = await fixture.svc(['edge', 'list', 'blocked-certificates', caId, '--json']);
    const [entry] = JSON.parse(json.stdout);

    const lifted = await fixture.svc(['edge', 'delete', 'blocked-certificate', caId, entry.id]);
    const after = await fixture.svc(['edge', 'list', 'blocked-certificates', 'cli-factory']);

    expect(table.code).toBe(0);
    expect(table.stdout).toContain('cli-sensor');
    expect(table.stdout).toContain('cli-factory-cli-sensor');
    expect(table.stdout).toContain('results: 1');
    expect(entry).toMatchObject({
      caId,
      fingerprint,
      commonName: 'cli-sensor',
      identityName: 'cli-factory-cli-sensor',
    });
    expect(lifted.code).toBe(0);
    expect(lifted.stdout).toContain(`Lifted block ${entry.id} of CA cli-factory`);
    expect(after.stdout).toContain('results: 0');
  });

  test('an unknown CA exits 1 with one line on stderr', async () => {
    const res = await fixture.svc(['edge', 'list', 'blocked-certificates', 'no-such-ca']);

    expect(res.code).toBe(1);
    expect(res.stderr).toBe('svc: no CA is named "no-such-ca" or has that id\n');
  });
});
