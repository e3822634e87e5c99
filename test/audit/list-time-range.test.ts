import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { TrailPosition } from '../../src/db/trail-query.js';
import { PROBE_ROWS } from '../../src/repositories/audit-event-list-repository.js';
import { encodeTrailCursor } from '../../src/schemas/trail-cursor.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';

/**
 * Time ranges on `occurredAt`: answered from the rows next to where the page starts when they
 * fill it (a recent range), else from the range's own index. Here the range lies behind more
 * newer events than that first look reads, so both ways of answering are used and must agree
 * with the trail order, without gaps or repeats.
 */
describe('audit events by time range, near the head and far behind it', () => {
  let server: TestServer;
  let admin: ManagementApi;
  const OLD = 30;
  const NEW = PROBE_ROWS + 20;
  /** 2026-02-01T00:00Z + n minutes. */
  const minute = (n: number) => new Date(Date.UTC(2026, 1, 1) + n * 60_000).toISOString();

  beforeAll(async () => {
    server = await startTestServer();
    admin = managementApi(server, await server.adminToken());
    const insert = (event: string, from: number, to: number, offset: number) =>
      server.app.knex.raw(
        `insert into audit_events (event, occurred_at, identity_id, details)
           select ?, ?::timestamptz + (i * interval '1 minute'), 'range-' || (i % 3), '{}'
           from generate_series(?::int, ?::int) as i order by i`,
        [event, minute(offset), from, to],
      );
    // One statement per transaction: 30 old events (minutes 0-29), then many newer ones a day later.
    for (let i = 0; i < OLD; i++) await insert('range.old', i, i, 0);
    await insert('range.new', 0, NEW - 1, 24 * 60);
    // On PostgreSQL the rows are readable once every older transaction on the server has ended.
    await waitFor(async () => (await admin.get('/audit-events?limit=1')).body.data[0]?.event === 'range.new');
  }, 120_000);
  afterAll(() => server.close());

  async function walk(query: string, limit: number): Promise<string[]> {
    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const res = await admin.get(
        `/audit-events?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((e: { occurredAt: string }) => e.occurredAt));
      cursor = res.body.meta.pagination.nextCursor;
    }
    return seen;
  }
  const filter = (text: string) => `filter=${encodeURIComponent(text)}`;
  const minutes = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => minute(from + i));

  test('a range far behind the head: every event once, newest first, in pages', async () => {
    const seen = await walk(filter(`occurredAt >= "${minute(5)}" and occurredAt < "${minute(25)}"`), 6);
    expect(seen).toEqual(minutes(5, 25).reverse());
    const withIdentity = await walk(filter(`identityId = "range-1" and occurredAt < "${minute(OLD)}"`), 4);
    expect(withIdentity).toEqual(
      minutes(0, OLD)
        .filter((_, i) => i % 3 === 1)
        .reverse(),
    );
  });

  test('a recent range is answered from the head; a range with no events is empty', async () => {
    const recent = await admin.get(
      `/audit-events?${filter(`occurredAt >= "${minute(24 * 60 + NEW - 10)}"`)}&limit=5`,
    );
    expect(recent.body.data.map((e: { occurredAt: string }) => e.occurredAt)).toEqual(
      minutes(24 * 60 + NEW - 5, 24 * 60 + NEW).reverse(),
    );
    const none = await admin.get(`/audit-events?${filter(`occurredAt < "${minute(-1)}"`)}`);
    expect(none.body.data).toEqual([]);
    expect(none.body.meta.pagination.nextCursor).toBeNull();
  });

  test('following a range from its oldest event reaches each later one once, oldest first', async () => {
    // The position of the oldest event, as a page ending there would return it.
    const oldest = (await server.app
      .knex('audit_events')
      .where('event', 'range.old')
      .orderBy('audit_events.id')
      .first(server.app.knex.raw('tx::text as tx, id::text as id'))) as TrailPosition;
    let cursor = encodeTrailCursor(oldest);
    const range = filter(`occurredAt >= "${minute(0)}" and occurredAt < "${minute(OLD)}"`);
    const seen: string[] = [];
    for (;;) {
      const res = await admin.get(`/audit-events?${range}&after=${cursor}&limit=7`);
      expect(res.status).toBe(200);
      if (res.body.data.length === 0) break;
      seen.push(...res.body.data.map((e: { occurredAt: string }) => e.occurredAt));
      cursor = res.body.meta.pagination.nextCursor;
    }
    expect(seen).toEqual(minutes(1, OLD));
  });
});
