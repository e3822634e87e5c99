// The controller runs with the V8 heap limits of src/node-heap-options.ts on every start path
// (docs/operations.md, "Memory"); a burst of logins must still go through under them.
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTROLLER_NODE_OPTIONS, missingNodeOptions } from '../../src/node-heap-options.js';
import { createHttpsClient, type HttpsClient } from '../helpers/https-client.js';
import { passwordLogin } from '../helpers/oidc-client.js';
import { spawnController, waitListening, type SpawnedController } from '../helpers/spawn-controller.js';
import { createTestDatabaseUrl } from '../helpers/test-database.js';

jest.setTimeout(300_000);

const root = process.cwd();
const MGMT = '/edge/management/v1';
const USERS = 8;
const LOGINS = 50;

describe('the heap options', () => {
  test('npm start and the image start the controller with them', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe(`node ${CONTROLLER_NODE_OPTIONS.join(' ')} dist/src/main.js`);
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    const cmd = ['node', ...CONTROLLER_NODE_OPTIONS, 'dist/src/main.js'].map((arg) => JSON.stringify(arg));
    expect(dockerfile).toContain(`CMD [${cmd.join(', ')}]`);
    expect(dockerfile).not.toContain('NODE_OPTIONS'); // the image's CLI runs without them
  });

  test('svc controller run adds only what neither the flags nor NODE_OPTIONS set', () => {
    expect(missingNodeOptions([], '')).toEqual(CONTROLLER_NODE_OPTIONS);
    expect(missingNodeOptions([...CONTROLLER_NODE_OPTIONS], '')).toEqual([]);
    // The operator's own value wins; V8 reads - and _ alike.
    expect(missingNodeOptions([], '--max_semi_space_size=32')).toEqual(['--heap-growing-percent=100']);
    expect(missingNodeOptions(['--heap_growing_percent=50'], '--inspect')).toEqual([
      '--max-semi-space-size=8',
    ]);
    expect(missingNodeOptions(['--heap-growing-percent=50'], '--max-semi-space-size=4')).toEqual([]);
  });
});

describe('a login burst under the heap options', () => {
  let db: Awaited<ReturnType<typeof createTestDatabaseUrl>>;
  let dataDir: string;
  let controller: SpawnedController;
  let client: HttpsClient;

  beforeAll(async () => {
    db = await createTestDatabaseUrl();
    dataDir = mkdtempSync(join(tmpdir(), 'svc-heap-'));
    controller = await spawnController(
      {
        SVC_DATA_DIR: dataDir,
        SVC_RATE_LIMITS_ENABLED: 'false',
        ...(db ? { DATABASE_URL: db.url } : {}),
      },
      undefined,
      [],
      [...CONTROLLER_NODE_OPTIONS],
    );
    await waitListening(controller);
    client = createHttpsClient(controller.url, { ca: controller.ca() });
  });

  afterAll(async () => {
    await client?.close();
    controller?.child.kill('SIGTERM');
    await controller?.exited;
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test(`${LOGINS} logins, ${USERS} at a time, all succeed and the controller keeps running`, async () => {
    const cmdline = readFileSync(`/proc/${controller.child.pid}/cmdline`, 'utf8').split('\0');
    expect(cmdline).toEqual(expect.arrayContaining([...CONTROLLER_NODE_OPTIONS]));

    const admin = await client.post(`${MGMT}/authenticate?method=password`, {
      body: { username: 'admin', password: 'admin-password-1' },
    });
    expect(admin.status).toBe(200);
    const headers = { 'svc-session': admin.body.data.token as string };
    const users: { name: string; password: string }[] = [];
    for (let i = 0; i < USERS; i++) {
      const name = `burst-${i}`;
      const created = await client.post(`${MGMT}/identities`, {
        headers,
        body: { name, isAdmin: false, enrollment: { updb: name } },
      });
      const detail = await client.get(`${MGMT}/identities/${created.body.data.id}`, { headers });
      const password = `Burst-pw-${i}-xxxxxxxx`;
      const enrolled = await client.post(
        `/edge/client/v1/enroll/updb?token=${detail.body.data.enrollment.updb.token}`,
        { body: { password } },
      );
      expect(enrolled.status).toBe(200);
      users.push({ name, password });
    }

    let started = 0;
    const tokens: string[] = [];
    await Promise.all(
      users.map(async (user) => {
        while (started < LOGINS) {
          started++;
          const { tokens: t } = await passwordLogin(client, user.name, user.password);
          tokens.push(t.access_token);
        }
      }),
    );
    expect(tokens).toHaveLength(LOGINS);
    const me = await client.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${tokens.at(-1)}` },
    });
    expect(me.status).toBe(200);
    expect(controller.child.exitCode).toBeNull();
  });
});
