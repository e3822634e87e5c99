import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { passwordLogin, refreshTokens, type TokenSet } from '../helpers/oidc-client.js';
import { freePort } from '../helpers/spawn-controller.js';
import { startTestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  enrolledUpdbUser,
  managementApi,
  pendingEnrollment,
} from '../identities/identity-fixtures.js';
import {
  bearer,
  certLogin,
  enrollOtt,
  afterRestoreScript,
  MASTER_KEY,
  OTHER_KEY,
  session,
  snapshot,
  WRONG_KEY_LINE,
  type Device,
} from './backup-fixtures.js';

// The embedded database whatever TEST_DATABASE_URL says: its backup is a copy of the data directory.
describe('the embedded database: a copy of the stopped data directory is its backup', () => {
  const dirs: string[] = [];
  const newDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-embedded-backup-'));
    dirs.push(dir);
    return dir;
  };
  let port: number;
  let original: string;
  let copy: string;
  let before: Awaited<ReturnType<typeof snapshot>>;
  let device: Device;
  let alice: { id: string; password: string; token: string };
  let oidc: TokenSet;
  const start = (dataDir: string) =>
    startTestServer({ embedded: true, dataDir, env: { SVC_ADDRESS: `127.0.0.1:${port}` } });

  beforeAll(async () => {
    port = await freePort();
    original = newDir();
    const server = await start(original);
    const api = managementApi(server, await server.adminToken());
    alice = await enrolledUpdbUser(server, api, 'alice');
    const pending = await pendingEnrollment(api, 'device-1', { ott: true });
    device = { identityId: pending.identityId, ...(await enrollOtt(server, pending.token, 'device-1')) };
    expect((await api.post('/keys/rotate')).status).toBe(200);
    oidc = (await passwordLogin(server.client, 'alice', alice.password)).tokens;
    before = await snapshot(server, api);

    // While it runs, the data directory is locked: nothing else opens the database.
    const refused = await afterRestoreScript({ SVC_DATA_DIR: original, SVC_MASTER_KEY: MASTER_KEY });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^svc controller after-restore refused: the embedded database in .* is in use by process \d+/,
    );

    await server.close();
    copy = newDir();
    rmSync(copy, { recursive: true });
    execFileSync('cp', ['-a', original, copy]);
  }, 180_000);
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('a controller started on the copy has the same identities, keys and CA, and its sessions', async () => {
    const restored = await start(copy);
    try {
      const api = managementApi(restored, await restored.adminToken());
      expect(await snapshot(restored, api)).toEqual(before);
      expect(before.kids).toHaveLength(2);
      expect((await certLogin(restored, device)).status).toBe(200);
      expect(
        (await restored.client.get(`${CLIENT}/current-identity`, bearer(oidc.access_token))).status,
      ).toBe(200);
    } finally {
      await restored.close();
    }
  }, 180_000);

  test('the restore step refuses without the master key or with another one, then ends every session of the copy', async () => {
    const missing = await afterRestoreScript({ SVC_DATA_DIR: copy });
    expect([missing.code, missing.stderr]).toEqual([
      1,
      `svc controller after-restore refused: no master key: set SVC_MASTER_KEY, or put the backup's master.key in ${copy}\n`,
    ]);
    expect(existsSync(join(copy, 'master.key'))).toBe(false);
    const wrong = await afterRestoreScript({ SVC_DATA_DIR: copy, SVC_MASTER_KEY: OTHER_KEY });
    expect([wrong.code, wrong.stdout, wrong.stderr]).toEqual([
      1,
      '',
      `svc controller after-restore refused: ${WRONG_KEY_LINE}\n`,
    ]);

    const done = await afterRestoreScript({ SVC_DATA_DIR: copy, SVC_MASTER_KEY: MASTER_KEY });
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(
      /^after restore: ended [1-9]\d* API sessions, .*, 1 refresh token, .*; signing key \S+ replaces 2 restored keys; /,
    );
    expect(done.stdout.split('\n')).toHaveLength(2);

    const restored = await start(copy);
    try {
      const { client } = restored;
      expect((await client.get(`${CLIENT}/current-identity`, bearer(oidc.access_token))).status).toBe(401);
      expect((await refreshTokens(client, oidc.refresh_token!)).body.error).toBe('invalid_grant');
      expect((await client.get(`${CLIENT}/current-api-session`, session(alice.token))).status).toBe(401);
      const fresh = (await passwordLogin(client, 'alice', alice.password)).tokens;
      expect((await client.get(`${CLIENT}/current-identity`, bearer(fresh.access_token))).status).toBe(200);
      expect((await certLogin(restored, device)).status).toBe(200);
      const api = managementApi(restored, await restored.adminToken());
      const after = await snapshot(restored, api);
      expect({ ca: after.ca, names: after.names }).toEqual({ ca: before.ca, names: before.names });
      expect(after.kids).toHaveLength(1);
      expect(before.kids).not.toContain(after.kids[0]);
    } finally {
      await restored.close();
    }
  }, 180_000);
});
