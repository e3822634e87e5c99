import { afterAll, afterEach, describe, expect, jest, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { createHttpsClient } from '../helpers/https-client.js';
import { spawnController, waitListening, type SpawnedController } from '../helpers/spawn-controller.js';
import { createTestDatabaseUrl, testWithPostgres } from '../helpers/test-database.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  startWebhookReceiver,
  type ReceivedAttempt,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js';
import { fanoutCaughtUp, insertWebhook } from '../helpers/webhook-rows.js';
import { createIdentity, managementApi, MGMT } from '../identities/identity-fixtures.js';

// Controller processes start in tens of seconds on a loaded machine, and a lease must run out.
jest.setTimeout(240_000);

const bodyOf = (a: ReceivedAttempt) => JSON.parse(a.body) as { data: Record<string, any> };

/**
 * An instance that stops between claiming a delivery and acknowledging it: the delivery goes to
 * whoever claims it after the lease, and is sent again with the same webhook-id.
 */
describe('webhook delivery: an instance gone between claim and acknowledgement', () => {
  let receiver: WebhookReceiver;
  const cleanups: (() => Promise<unknown> | unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  afterAll(() => receiver?.close());

  const claimedRow = (knex: Knex, webhookId: string) =>
    waitFor(
      async () => {
        const d = await knex('webhook_deliveries').where({ webhook_id: webhookId }).first();
        return d?.claimed_by && d;
      },
      { what: 'the delivery to be claimed' },
    );

  test('a restart: the delivery the stopped instance held is sent once its lease ends', async () => {
    receiver ??= await startWebhookReceiver();
    const name = 'restart';
    receiver.state.modes.set(name, 'hang');
    const db = await createTestDatabaseUrl();
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-webhook-restart-'));
    cleanups.push(
      () => rmSync(dataDir, { recursive: true, force: true }),
      () => db?.drop(),
    );
    const options = {
      dataDir,
      databaseUrl: db?.url,
      env: receiver.controllerEnv,
      // A send times out after half the lease: 5 s to stop the instance before it would record
      // a failed attempt.
      webhooks: { leaseMs: 10_000 },
    };
    const first: TestServer = await startTestServer(options);
    cleanups.push(() => first.close());
    await waitFor(() => fanoutCaughtUp(first.app.knex), { what: 'the fan-out to pass the events so far' });
    const hook = await insertWebhook(first.app.knex, {
      name,
      url: receiver.urlFor(name),
      events: ['identity.*'],
    });
    receiver.state.secrets.set(name, hook.secret);
    const identityId = await createIdentity(managementApi(first, await first.adminToken()), {
      name: 'restarted-delivery',
      isAdmin: false,
    });
    const hung = await waitFor(() => receiver.attemptsAt(name)[0], { what: 'the first attempt to arrive' });
    const claimed = await claimedRow(first.app.knex, hook.id);
    await first.close();
    // The answer reaches a stopped instance: nothing records it.
    receiver.state.modes.set(name, 200);
    receiver.release();

    const second = await startTestServer(options);
    cleanups.push(() => second.close());
    const knex = second.app.knex;
    const delivered = await waitFor(() => receiver.delivered(name).find((a) => a !== hung), {
      what: 'the delivery by the restarted instance',
    });
    expect(delivered.id).toBe(hung.id);
    expect(delivered.body).toBe(hung.body);
    expect(bodyOf(delivered).data.identityId).toBe(identityId);
    expect(delivered.verifiedWith).toEqual([name]);
    expect(delivered.timestamp).toBeGreaterThanOrEqual(hung.timestamp);
    const row = await waitFor(async () => {
      const d = await knex('webhook_deliveries').where({ id: hung.id }).first();
      return d?.status === 'succeeded' && d;
    });
    expect(row).toMatchObject({ attempts: 1, claimed_by: null });
    const attempts = await knex('webhook_delivery_attempts').where({ delivery_id: hung.id });
    expect(attempts).toHaveLength(1);
    expect(attempts[0].instance_id).not.toBe(claimed.claimed_by);
  });

  testWithPostgres(
    'kill -9 of the delivering process: the other process delivers after the lease',
    async () => {
      receiver ??= await startWebhookReceiver();
      const name = 'killed';
      receiver.state.modes.set(name, 'hang');
      const db = (await createTestDatabaseUrl())!;
      cleanups.push(() => db.drop());
      const knex = knexFactory({ client: 'pg', connection: db.url, pool: { min: 0, max: 2 } });
      cleanups.push(() => knex.destroy());
      const start = async (side: string) => {
        const dir = mkdtempSync(join(tmpdir(), `svc-webhook-kill-${side}-`));
        const c = await spawnController({
          SVC_DATA_DIR: dir,
          DATABASE_URL: db.url,
          SVC_RATE_LIMITS_ENABLED: 'false',
          ...receiver.controllerEnv,
          // Long enough for the test to kill the process before its send times out (half the lease).
          SVC_TEST_WEBHOOK_LEASE_MS: '20000',
        });
        cleanups.push(async () => {
          if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
          await c.exited;
          rmSync(dir, { recursive: true, force: true });
        });
        await waitListening(c);
        return c;
      };
      const processes: SpawnedController[] = [await start('a'), await start('b')];
      await waitFor(() => fanoutCaughtUp(knex), { what: 'the fan-out to pass the events so far' });
      const hook = await insertWebhook(knex, {
        name,
        url: receiver.urlFor(name),
        events: ['identity.created'],
      });
      receiver.state.secrets.set(name, hook.secret);

      const client = createHttpsClient(processes[0]!.url, { ca: processes[0]!.ca() });
      cleanups.push(() => client.close());
      const login = await client.post(`${MGMT}/authenticate?method=password`, {
        body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
      });
      expect(login.status).toBe(200);
      const created = await client.post(`${MGMT}/identities`, {
        headers: { 'svc-session': login.body.data.token },
        body: { name: 'killed-delivery', isAdmin: false },
      });
      expect(created.status).toBe(201);

      const hung = await waitFor(() => receiver.attemptsAt(name)[0], { what: 'the first attempt to arrive' });
      const claimed = await claimedRow(knex, hook.id);
      const pid = Number(String(claimed.claimed_by).split(':').at(-2));
      const sender = processes.find((p) => p.child.pid === pid)!;
      const survivor = processes.find((p) => p !== sender)!;
      expect(sender).toBeDefined();
      sender.child.kill('SIGKILL');
      await sender.exited;
      // Killed between claim and acknowledgement: nothing of the attempt was recorded.
      expect(await knex('webhook_deliveries').where({ id: hung.id }).first()).toMatchObject({
        attempts: 0,
        status: 'pending',
        claimed_by: claimed.claimed_by,
      });
      receiver.state.modes.set(name, 200);

      const delivered = await waitFor(() => receiver.delivered(name)[0], {
        timeout: 90_000,
        what: 'the delivery by the surviving process',
      });
      expect(delivered.id).toBe(hung.id);
      expect(delivered.body).toBe(hung.body);
      expect(bodyOf(delivered).data.identityId).toBe(created.body.data.id);
      expect(delivered.verifiedWith).toEqual([name]);
      expect(hung.answered).toBe('dropped');
      const row = await waitFor(async () => {
        const d = await knex('webhook_deliveries').where({ id: hung.id }).first();
        return d?.status === 'succeeded' && d;
      });
      expect(row.attempts).toBe(1);
      const [attempt] = await knex('webhook_delivery_attempts').where({ delivery_id: hung.id });
      expect(String(attempt.instance_id).split(':').at(-2)).toBe(String(survivor.child.pid));
    },
  );
});
