import { afterAll, describe, expect, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as m020 from '../../migrations/020_passkeys.js';
import { createTestDatabaseUrl } from '../helpers/test-database.js';
import { startTestServer } from '../helpers/test-server.js';
import { managementApi } from '../identities/identity-fixtures.js';

/**
 * Migration 020: a new installation's `default` policy allows passkey sign-in; on an upgrade the
 * existing policies do not until an operator allows it; policies created afterwards do.
 */
describe('passkey policy fields across the upgrade (migration 020_passkeys)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-migrate-passkeys-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('new installation: default allows passkeys; upgraded: existing policies do not, new ones do', async () => {
    const db = await createTestDatabaseUrl();
    const options = { dataDir, databaseUrl: db?.url };
    const first = await startTestServer(options);
    let customId: string;
    try {
      const api = managementApi(first, await first.adminToken());
      const fresh = (await api.get('/auth-policies/default')).body.data;
      expect(fresh.primary.passkey).toEqual({ allowed: true });
      expect(fresh.secondary.requirePasskey).toBe(false);
      const custom = await api.post('/auth-policies', {
        body: { name: 'before-the-upgrade', secondary: { requirePasskey: true } },
      });
      customId = custom.body.data.id;
      expect(custom.status).toBe(201);
      expect((await api.get(`/auth-policies/${customId}`)).body.data.secondary.requirePasskey).toBe(true);
      await m020.down(first.app.knex);
      await first.app.knex('knex_migrations').where({ name: '020_passkeys' }).delete();
    } finally {
      await first.close();
    }

    const upgraded = await startTestServer(options);
    try {
      const api = managementApi(upgraded, await upgraded.adminToken());
      const policies = (await api.get('/auth-policies')).body.data as any[];
      const created = await api.post('/auth-policies', { body: { name: 'after-the-upgrade' } });
      const createdDetail = (await api.get(`/auth-policies/${created.body.data.id}`)).body.data;
      // A changed secondary block ends the sessions under the policy, the admin's among them.
      const patched = await api.patch('/auth-policies/default', {
        body: { primary: { passkey: { allowed: true } }, secondary: { requirePasskey: true } },
      });
      const again = managementApi(upgraded, await upgraded.adminToken());
      const detail = (await again.get('/auth-policies/default')).body.data;

      expect(
        policies.map((p) => [p.id, p.primary.passkey.allowed, p.secondary.requirePasskey]).sort(),
      ).toEqual(
        [
          ['default', false, false],
          [customId!, false, false],
        ].sort(),
      );
      expect(createdDetail.primary.passkey.allowed).toBe(true);
      expect(patched.status).toBe(200);
      expect([detail.primary.passkey.allowed, detail.secondary.requirePasskey]).toEqual([true, true]);
    } finally {
      await upgraded.close();
      await db?.drop();
    }
  });
});
