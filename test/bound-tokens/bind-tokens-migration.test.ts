import { afterAll, describe, expect, test } from '@jest/globals';
import type { Knex } from 'knex';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabaseUrl } from '../helpers/test-database.js';
import { startTestServer } from '../helpers/test-server.js';
import { managementApi } from '../identities/identity-fixtures.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import { certLoginToCallback, deviceClient, enrolledDevice, exchange } from './bound-fixtures.js';

/**
 * Migration 018: a new installation's `default` policy binds certificate logins' tokens; on an
 * upgrade every existing policy, `default` among them, keeps unbound tokens until an operator
 * turns binding on; policies created afterwards bind.
 */
describe('primary.cert.bindTokens across the upgrade (migration 018_policy_bind_tokens)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-migrate-bind-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('new installation: default binds; upgraded: existing policies do not, new ones do', async () => {
    const db = await createTestDatabaseUrl();
    const options = { dataDir, databaseUrl: db?.url };
    const first = await startTestServer(options);
    let customId: string;
    try {
      const api = managementApi(first, await first.adminToken());
      const fresh = await api.get('/auth-policies/default');
      expect(fresh.body.data.primary.cert.bindTokens).toBe(true);
      const custom = await api.post('/auth-policies', { body: { name: 'before-the-upgrade' } });
      customId = custom.body.data.id;
      await downgrade(first.app.knex);
    } finally {
      await first.close();
    }

    const upgraded = await startTestServer(options);
    try {
      const api = managementApi(upgraded, await upgraded.adminToken());
      const policies = (await api.get('/auth-policies')).body.data as any[];
      const created = await api.post('/auth-policies', { body: { name: 'after-the-upgrade' } });
      const device = await enrolledDevice(upgraded, api, 'upgraded-device');
      const { config, close } = await deviceClient(upgraded, device);
      const mtls = upgraded.newClient({ cert: device.cert, key: device.key });
      const tokens = await exchange(config, await certLoginToCallback(upgraded, config, mtls)).finally(close);

      expect(policies.map((p) => [p.id, p.primary.cert.bindTokens]).sort()).toEqual(
        [
          ['default', false],
          [customId!, false],
        ].sort(),
      );
      expect(
        (await api.get(`/auth-policies/${created.body.data.id}`)).body.data.primary.cert.bindTokens,
      ).toBe(true);
      // The device is under `default`, upgraded to unbound tokens: usable without its certificate.
      expect(payloadOf(tokens.access_token).cnf).toBeUndefined();
      const call = await upgraded.client.get('/edge/client/v1/current-identity', {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      });
      expect(call.status).toBe(200);
    } finally {
      await upgraded.close();
      await db?.drop();
    }
  });
});

/** The schema as it was before migration 018. */
async function downgrade(knex: Knex): Promise<void> {
  await knex.schema.alterTable('auth_policies', (t) => t.dropColumn('cert_bind_tokens'));
  await knex('knex_migrations').where({ name: '018_policy_bind_tokens' }).delete();
}
