import { afterAll, beforeAll, expect, test } from '@jest/globals';
import pg from 'pg';
import { createAdvisoryLock } from '../../src/db/advisory-lock.js';
import { createDatabase, type Database } from '../../src/db/create-database.js';
import { ifInstanceLockFree, type InstanceLock } from '../../src/db/instance-lock.js';
import { createLeaseLock } from '../../src/db/lease-lock.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createTestDatabaseUrl, describeWithPostgres } from '../helpers/test-database.js';
import { waitFor } from '../helpers/wait-for.js';

const KEY = '424242424242';

/** Many contenders run `rounds` sections each; returns the most that were ever inside at once. */
async function mostInsideAtOnce(
  locks: InstanceLock[],
  rounds: number,
): Promise<{ most: number; ran: number }> {
  let inside = 0;
  let most = 0;
  let ran = 0;
  await Promise.all(
    locks.map(async (lock) => {
      for (let i = 0; i < rounds; i++) {
        const r = await ifInstanceLockFree(lock, async () => {
          inside++;
          most = Math.max(most, inside);
          await new Promise((resolve) => setTimeout(resolve, 5));
          inside--;
        });
        if (r.ran) ran++;
      }
    }),
  );
  return { most, ran };
}

describeWithPostgres('only one instance at a time: advisory lock and lease row', () => {
  let created: { url: string; drop: () => Promise<void> };
  let databases: Database[];

  beforeAll(async () => {
    created = (await createTestDatabaseUrl())!;
    // Separate pools stand for separate instances.
    databases = Array.from({ length: 4 }, () =>
      createDatabase({ kind: 'pg', connectionString: created.url, poolMax: 3, instanceLock: 'lease' }),
    );
  });
  afterAll(async () => {
    await Promise.all(databases.map((d) => d.knex.destroy()));
    await created.drop();
  });

  test('instances migrating together under the lease: the migrations run once', async () => {
    const applied = await Promise.all(databases.map((d) => migrateToLatest(d)));
    expect(applied.filter((list) => list.length > 0)).toHaveLength(1);
    expect(applied.flat()).toContain('011_instance_locks');
    const { rows } = await databases[0]!.knex.raw('SELECT count(*)::int AS n FROM instance_locks');
    expect(rows[0].n).toBe(0);
  });

  const kinds: [string, (i: number) => InstanceLock][] = [
    ['advisory', () => createAdvisoryLock({ connectionString: created.url, key: KEY })],
    ['lease', (i) => createLeaseLock({ knex: databases[i % databases.length]!.knex, name: 'test-section' })],
  ];

  test.each(kinds)('%s: a held lock refuses every other holder until it is released', async (_, make) => {
    const [first, second] = [make(0), make(1)];
    const held = (await first.tryAcquire())!;
    expect(held.held).toBe(true);
    expect(await second.tryAcquire()).toBeUndefined();
    await held.release();
    const next = (await second.tryAcquire())!;
    expect(next.held).toBe(true);
    expect(await first.tryAcquire()).toBeUndefined();
    await next.release();
  });

  test.each(kinds)('%s: eight contenders, never two inside at once', async (_, make) => {
    const { most, ran } = await mostInsideAtOnce(
      Array.from({ length: 8 }, (_x, i) => make(i)),
      10,
    );
    expect(most).toBe(1);
    expect(ran).toBeGreaterThan(0);
  });

  test.each(kinds)('%s: acquire waits for the holder, then takes the lock', async (_, make) => {
    const held = (await make(0).tryAcquire())!;
    let taken = false;
    const waiting = make(1)
      .acquire()
      .then((h) => {
        taken = true;
        return h;
      });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(taken).toBe(false);
    await held.release();
    await (await waiting).release();
    expect(taken).toBe(true);
  });

  test('advisory: a holder whose session dies loses the lock at once', async () => {
    const held = (await createAdvisoryLock({ connectionString: created.url, key: KEY }).tryAcquire())!;
    const admin = new pg.Client({ connectionString: created.url });
    await admin.connect();
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid() AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    );
    await admin.end();
    const next = await waitFor(
      () => createAdvisoryLock({ connectionString: created.url, key: KEY }).tryAcquire(),
      {
        what: 'the lock of a dead session to be free',
      },
    );
    await waitFor(() => !held.held, { what: 'the dead holder to notice' });
    await held.release();
    await next.release();
  });

  test('lease: a holder that stops renewing (crashed) is taken over after expiry, and its release leaves the new lease', async () => {
    const knex = databases[0]!.knex;
    const crashed = (await createLeaseLock({
      knex,
      name: 'expiry',
      ttlMs: 1000,
      renewEveryMs: 0,
    }).tryAcquire())!;
    const other = createLeaseLock({ knex: databases[1]!.knex, name: 'expiry' });
    expect(await other.tryAcquire()).toBeUndefined();
    const taken = await waitFor(() => other.tryAcquire(), { what: 'the expired lease to be taken over' });
    expect(crashed.held).toBe(false);
    // The old holder comes back and releases: only its own row would go, and it has none.
    await crashed.release();
    expect(await createLeaseLock({ knex, name: 'expiry' }).tryAcquire()).toBeUndefined();
    await taken.release();
  });

  test('lease: a renewed lease outlives its time to live', async () => {
    const knex = databases[0]!.knex;
    // Renewed every 250 ms with 5 s to live: only a stall of nearly 5 s would lose it.
    const held = (await createLeaseLock({
      knex,
      name: 'renewed',
      ttlMs: 5000,
      renewEveryMs: 250,
    }).tryAcquire())!;
    const other = createLeaseLock({ knex: databases[1]!.knex, name: 'renewed' });
    const deadline = Date.now() + 7000;
    while (Date.now() < deadline) {
      expect(await other.tryAcquire()).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(held.held).toBe(true);
    await held.release();
    await (await other.tryAcquire())!.release();
  });
});
