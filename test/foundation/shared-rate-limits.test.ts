import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpsClient, type HttpsClient } from '../helpers/https-client.js';
import { spawnController, waitListening, type SpawnedController } from '../helpers/spawn-controller.js';
import { createTestDatabaseUrl, describeWithPostgres } from '../helpers/test-database.js';

// Two controller processes (tsx, migrations, PKI): minutes on a loaded machine.
jest.setTimeout(240_000);

// A window of 10 requests per 10 seconds: far longer than the dozen requests below take.
const BURST = 10;

describeWithPostgres('per-address limits shared by two processes (rateLimits.store: postgres)', () => {
  let db: { url: string; drop: () => Promise<void> };
  let a: SpawnedController;
  let b: SpawnedController;
  let onA: HttpsClient;
  let onB: HttpsClient;

  beforeAll(async () => {
    db = (await createTestDatabaseUrl())!;
    const env = (prefix: string) => ({
      SVC_DATA_DIR: mkdtempSync(join(tmpdir(), prefix)),
      DATABASE_URL: db.url,
      SVC_RATE_LIMITS_STORE: 'postgres',
      SVC_RATE_LIMITS_PER_SECOND: '1',
      SVC_RATE_LIMITS_BURST: String(BURST),
    });
    // One after the other: the first creates the PKI and runs the migrations.
    a = await spawnController(env('svc-rl-a-'));
    await waitListening(a);
    b = await spawnController(env('svc-rl-b-'));
    await waitListening(b);
    onA = createHttpsClient(a.url, { ca: a.ca() });
    onB = createHttpsClient(b.url, { ca: b.ca() });
  });

  afterAll(async () => {
    await Promise.all([onA?.close(), onB?.close()]);
    for (const c of [a, b]) c?.child.kill('SIGTERM');
    await Promise.all([a?.exited, b?.exited]);
    await db?.drop();
  });

  test('one address gets one budget across both processes, not one per process', async () => {
    const attempt = (client: HttpsClient) =>
      client.post('/edge/client/v1/authenticate?method=password', {
        body: { username: 'nobody', password: 'wrong-password' },
      });
    const statuses: number[] = [];
    for (let i = 0; i < BURST + 2; i++) statuses.push((await attempt(i % 2 ? onB : onA)).status);

    // Each process alone has seen only half the burst: a count per process would let all pass.
    expect(statuses.slice(0, BURST)).toEqual(Array(BURST).fill(401));
    expect(statuses.slice(BURST)).toEqual([429, 429]);
    const limited = await attempt(onB);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(Number(limited.header('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
