import { afterAll, afterEach, describe, expect, jest, test } from '@jest/globals';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpsClient } from '../helpers/https-client.js';
import {
  freePort,
  spawnController,
  waitListening,
  type SpawnedController,
} from '../helpers/spawn-controller.js';
import { createTestDatabaseUrl } from '../helpers/test-database.js';

// Each test starts controller processes (tsx, migrations, PKI): minutes, not seconds, on a
// loaded machine; waitListening's own deadline reports a start that never comes.
jest.setTimeout(240_000);

const running: SpawnedController[] = [];
afterEach(async () => {
  for (const c of running.splice(0)) {
    if (c.child.exitCode === null) c.child.kill('SIGKILL');
    await c.exited;
  }
});

const ANNOUNCEMENT = /First admin created: username "admin", password "([^"]+)"/g;

describe('the generated first-admin password', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-first-admin-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('is printed exactly once, works, and is never printed again on a restart', async () => {
    const db = await createTestDatabaseUrl();
    const env = { SVC_DATA_DIR: dataDir, ...(db ? { DATABASE_URL: db.url } : {}) };
    try {
      const first = await spawnController(env, undefined, ['SVC_ADMIN_PASSWORD']);
      running.push(first);
      await waitListening(first);
      const announced = [...first.output().matchAll(ANNOUNCEMENT)].map((m) => m[1]!);
      expect(announced).toHaveLength(1);
      const password = announced[0]!;
      // A normal start says nothing about the runtime: the one in use is an LTS oidc-provider supports.
      expect(first.output()).not.toContain('Unsupported runtime');
      // Outside the structured log too: the one announcement is the only place it appears.
      expect(first.output().split(password)).toHaveLength(2);
      const client = createHttpsClient(first.url, { ca: first.ca() });
      const login = await client.post('/edge/management/v1/authenticate?method=password', {
        body: { username: 'admin', password },
      });
      await client.close();
      expect(login.status).toBe(200);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);

      const second = await spawnController(env, undefined, ['SVC_ADMIN_PASSWORD']);
      running.push(second);
      await waitListening(second);

      expect(second.output()).not.toContain('First admin created');
      expect(second.output()).not.toContain(password);
    } finally {
      for (const c of running.splice(0)) {
        if (c.child.exitCode === null) c.child.kill('SIGKILL');
        await c.exited;
      }
      await db?.drop();
    }
  });

  test('is printed even when the start fails later (its port is taken), and works on the next start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-first-admin-'));
    const port = await freePort();
    const squatter = createServer().listen(port, '127.0.0.1');
    await once(squatter, 'listening');
    try {
      const failed = await spawnController({ SVC_DATA_DIR: dir }, port, ['SVC_ADMIN_PASSWORD']);
      running.push(failed);
      expect(await failed.exited).toBe(1);
      const announced = [...failed.output().matchAll(ANNOUNCEMENT)].map((m) => m[1]!);
      expect(announced).toHaveLength(1);
      await new Promise((r) => squatter.close(r));

      const next = await spawnController({ SVC_DATA_DIR: dir }, port, ['SVC_ADMIN_PASSWORD']);
      running.push(next);
      await waitListening(next);
      const client = createHttpsClient(next.url, { ca: next.ca() });
      const login = await client.post('/edge/management/v1/authenticate?method=password', {
        body: { username: 'admin', password: announced[0]! },
      });
      await client.close();
      expect(login.status).toBe(200);
    } finally {
      squatter.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
