import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTROLLER_NODE_OPTIONS } from '../../src/node-heap-options.js';
import { createTestDatabaseUrl } from '../helpers/test-database.js';
import { runSvc, spawnSvc, type SvcResult } from './run-svc.js';

const PASSWORD = 'controller-run-admin-1';

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as { port: number };
  probe.close();
  await once(probe, 'close');
  return port;
}

/**
 * Retries `attempt` until it succeeds: the controller needs a few seconds (more on a busy
 * machine) to migrate its database and create its PKI.
 */
async function eventually(
  attempt: () => Promise<SvcResult | undefined>,
  deadlineMs = 150_000,
): Promise<SvcResult> {
  const deadline = Date.now() + deadlineMs;
  let last: SvcResult | undefined;
  while (Date.now() < deadline) {
    last = await attempt();
    if (last?.code === 0) return last;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`never succeeded: ${JSON.stringify(last)}`);
}

describe('svc controller run', () => {
  let home: string;
  let db: Awaited<ReturnType<typeof createTestDatabaseUrl>>;
  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'svc-cli-run-'));
    db = await createTestDatabaseUrl();
  });
  afterAll(async () => {
    await db?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  test('runs the controller in the foreground with the heap options; the CLI logs in to it; SIGTERM stops it cleanly', async () => {
    const port = await freePort();
    const dataDir = join(home, 'data');
    const controller = spawnSvc(['controller', 'run'], {
      home,
      env: {
        SVC_DATA_DIR: dataDir,
        SVC_ADDRESS: `127.0.0.1:${port}`,
        SVC_ADMIN_PASSWORD: PASSWORD,
        LOG_LEVEL: 'silent',
        ...(db ? { DATABASE_URL: db.url } : {}),
      },
    });
    controller.stdout.resume();
    controller.stderr.resume();
    const exited = once(controller, 'exit');
    try {
      const caFile = join(dataDir, 'pki', 'ca.pem');
      const url = `https://127.0.0.1:${port}`;

      await eventually(async () =>
        existsSync(caFile)
          ? runSvc(['login', url, '-u', 'admin', '-p', PASSWORD, '--ca', caFile], { home })
          : undefined,
      );
      const list = await runSvc(['edge', 'list', 'identities', '--json'], { home });

      expect(list.code).toBe(0);
      expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ name: 'admin', isAdmin: true })]);

      // V8 takes heap limits only at start: the controller runs in a child given the heap options.
      const pid = controller.pid!;
      const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
      const commandLines = children.map((child) =>
        readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0'),
      );
      expect(commandLines).toContainEqual(
        expect.arrayContaining([...CONTROLLER_NODE_OPTIONS, 'controller', 'run']),
      );
    } finally {
      controller.kill('SIGTERM');
    }
    const [code] = await exited;
    expect(code).toBe(0);
  }, 180_000);
});
