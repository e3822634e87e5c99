import { afterAll, beforeAll, expect, test } from '@jest/globals';
import pg from 'pg';
import { describeWithPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';

/**
 * The commit-order guard of the trail (docs/adr/0015-audit-events-and-webhooks.md) against real
 * concurrent transactions: an event whose transaction commits late, behind one that committed
 * first, is never passed over by a follower or a page.
 */
describeWithPostgres('following the audit trail while a transaction is open', () => {
  let server: TestServer;
  let admin: ManagementApi;
  const clients: pg.Client[] = [];
  const ADDRESS = '203.0.113.77';
  const filter = `filter=${encodeURIComponent(`sourceAddress = "${ADDRESS}"`)}`;

  beforeAll(async () => {
    server = await startTestServer();
    admin = managementApi(server, await server.adminToken());
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    await server.close();
  });

  async function connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: server.databaseUrl });
    await client.connect();
    clients.push(client);
    return client;
  }
  const insert = (client: pg.Client, event: string) =>
    client.query(
      `insert into audit_events (event, source_address, details) values ($1, $2, '{}') returning id::text`,
      [event, ADDRESS],
    );
  async function read(query: string): Promise<{ events: string[]; nextCursor: string }> {
    const res = await admin.get(`/audit-events?${filter}&${query}`);
    expect(res.status).toBe(200);
    return {
      events: res.body.data.map((e: { event: string }) => e.event),
      nextCursor: res.body.meta.pagination.nextCursor,
    };
  }

  test('an event committed after an open one is held back until that one commits, then both come in order', async () => {
    let cursor = (await read('after=now')).nextCursor;
    const held = await connect();
    const other = await connect();
    await held.query('begin');
    const heldId = (await insert(held, 'test.held')).rows[0].id as string;
    const committedId = (await insert(other, 'test.committed')).rows[0].id as string;
    // The id taken first commits last: a reader in id order would have passed it.
    expect(BigInt(heldId)).toBeLessThan(BigInt(committedId));

    // While `held` is open the committed event is neither followed nor listed, however often asked.
    for (let i = 0; i < 5; i++) {
      const step = await read(`after=${cursor}`);
      expect(step.events).toEqual([]);
      cursor = step.nextCursor;
      expect((await read('limit=500')).events).toEqual([]);
      await new Promise((r) => setTimeout(r, 100));
    }

    await held.query('commit');
    const seen: string[] = [];
    await waitFor(async () => {
      const step = await read(`after=${cursor}`);
      seen.push(...step.events);
      cursor = step.nextCursor;
      return seen.length >= 2;
    });
    expect(seen).toEqual(['test.held', 'test.committed']);
    expect((await read(`after=${cursor}`)).events).toEqual([]);
    expect((await read('limit=500')).events).toEqual(['test.committed', 'test.held']);
  });

  test('an event inserted later by the older transaction comes first: the order is the commit order', async () => {
    let cursor = (await read('after=now')).nextCursor;
    const older = await connect();
    const other = await connect();
    await older.query('begin');
    // The older transaction takes its id now, and writes its event after the other one committed.
    await older.query('select pg_current_xact_id()');
    await insert(other, 'test.younger');
    await insert(older, 'test.older');
    expect((await read(`after=${cursor}`)).events).toEqual([]);
    await older.query('commit');

    const seen: string[] = [];
    await waitFor(async () => {
      const step = await read(`after=${cursor}`);
      seen.push(...step.events);
      cursor = step.nextCursor;
      return seen.length >= 2;
    });
    expect(seen).toEqual(['test.older', 'test.younger']);
  });
});
