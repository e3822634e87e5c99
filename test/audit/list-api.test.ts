import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectError } from '../helpers/expect-error.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import {
  createIdentity,
  enrolledUpdbUser,
  managementApi,
  MGMT,
  type ManagementApi,
} from '../identities/identity-fixtures.js';

/**
 * `GET /edge/management/v1/audit-events` on a real server: events stored by identity changes
 * through the API, and rows inserted as the trail stores them (each its own transaction) where a
 * test needs fields the API does not produce yet (outcomes, addresses, old times). On PostgreSQL
 * a committed event is readable once every older transaction on the server has ended (other
 * suites may hold one for a moment), so reads that expect a fresh event wait for it.
 */

const ITEM_KEYS = ['attempts', 'details', 'event', 'id', 'occurredAt'];
const q = (filter: string, extra = '') => `?filter=${encodeURIComponent(filter)}${extra}`;

interface Fixture {
  event: string;
  outcome?: string;
  identityId?: string;
  actorId?: string;
  sourceAddress: string;
  occurredAt: string;
}

/** Ten events an hour apart, from 2026-01-01T00:00Z, each inserted in its own transaction. */
const FIXTURES: Fixture[] = Array.from({ length: 10 }, (_, i) => ({
  event: i % 2 === 0 ? 'auth.login' : 'auth.second-factor',
  outcome: i % 3 === 0 ? 'failure' : 'success',
  identityId: i < 6 ? 'list-fixture-a' : 'list-fixture-b',
  ...(i % 4 === 0 && { actorId: 'list-fixture-actor' }),
  sourceAddress: i < 5 ? '198.51.100.1' : '198.51.100.2',
  occurredAt: new Date(Date.UTC(2026, 0, 1, i)).toISOString(),
}));

describe('stored audit events on the management API', () => {
  let server: TestServer;
  let admin: ManagementApi;
  let adminToken: string;
  let adminId: string;
  /** Row ids of FIXTURES, in their order. */
  const fixtureIds: string[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    adminToken = await server.adminToken();
    admin = managementApi(server, adminToken);
    adminId = (await admin.get('/current-identity')).body.data.id;
    for (const f of FIXTURES) {
      const [row] = await server.app
        .knex('audit_events')
        .insert({
          event: f.event,
          outcome: f.outcome ?? null,
          identity_id: f.identityId ?? null,
          actor_id: f.actorId ?? null,
          source_address: f.sourceAddress,
          occurred_at: f.occurredAt,
          details: JSON.stringify({ method: 'password', n: fixtureIds.length }),
        })
        .returning(server.app.knex.raw('id::text as id'));
      fixtureIds.push((row as { id: string }).id);
    }
    // On PostgreSQL the rows are readable once every older transaction on the server has ended.
    await waitFor(
      async () => (await admin.get('/audit-events?limit=1')).body.data[0]?.id === fixtureIds.at(-1),
    );
  });
  afterAll(() => server.close());

  async function list(query: string): Promise<{ data: any[]; pagination: any }> {
    const res = await admin.get(`/audit-events${query}`);
    expect({ query, status: res.status, text: res.status === 200 ? '' : res.text }).toEqual({
      query,
      status: 200,
      text: '',
    });
    expect(Object.keys(res.body.meta)).toEqual(['pagination']);
    return { data: res.body.data, pagination: res.body.meta.pagination };
  }
  /** The newest-first answer to `query` once `ready` holds for its events. */
  const listWhen = (query: string, ready: (data: any[]) => boolean) =>
    waitFor(
      async () => {
        const page = await list(query);
        return ready(page.data) && page;
      },
      { what: `events of ${query}` },
    );
  /** Follows `query` from `after` until `count` events came; then one more read finds none. */
  async function follow(query: string, after: string, count: number) {
    const events: any[] = [];
    let cursor = after;
    await waitFor(
      async () => {
        const page = await list(`${query}&after=${cursor}`);
        events.push(...page.data);
        cursor = page.pagination.nextCursor;
        return events.length >= count;
      },
      { what: `${count} events after a cursor` },
    );
    expect((await list(`${query}&after=${cursor}`)).data).toEqual([]);
    return { events, cursor };
  }
  const ids = (items: { id: string }[]) => items.map((e) => e.id);
  /** Fixture row ids (newest first) of the fixtures `pick` selects. */
  const expected = (pick: (f: Fixture) => boolean) =>
    fixtureIds.filter((_, i) => pick(FIXTURES[i]!)).reverse();

  test('newest first, in commit order, with the documented fields and paging meta', async () => {
    const created = await createIdentity(admin, { name: 'audit-list-one', isAdmin: false });

    const { data, pagination } = await listWhen('?limit=500', (d) => d[0]?.identityId === created);

    // The identity created last is first; the fixtures follow newest first.
    expect(data[0]).toMatchObject({
      event: 'identity.created',
      identityId: created,
      actorId: adminId,
      sourceAddress: '127.0.0.1',
      attempts: 1,
    });
    expect(typeof data[0].requestId).toBe('string');
    expect(ids(data.filter((e) => e.identityId?.startsWith('list-fixture-')))).toEqual(
      [...fixtureIds].reverse(),
    );
    const fixture = data.find((e) => e.id === fixtureIds[0]);
    expect(fixture).toEqual({
      id: fixtureIds[0],
      event: 'auth.login',
      occurredAt: '2026-01-01T00:00:00.000Z',
      outcome: 'failure',
      identityId: 'list-fixture-a',
      actorId: 'list-fixture-actor',
      sourceAddress: '198.51.100.1',
      attempts: 1,
      details: { method: 'password', n: 0 },
    });
    for (const e of data)
      expect(
        Object.keys(e)
          .filter((k) => ITEM_KEYS.includes(k))
          .sort(),
      ).toEqual(ITEM_KEYS);
    expect(Object.keys(pagination).sort()).toEqual(['headCursor', 'limit', 'nextCursor']);
    expect(pagination).toMatchObject({ limit: 500, nextCursor: null });
    expect(pagination.headCursor).toMatch(/^[A-Za-z0-9_-]+$/);
    const text = (await admin.get('/audit-events?limit=500')).text;
    expect(text.includes(adminToken)).toBe(false);
  });

  test('each indexed filter, alone and together, and the default page size', async () => {
    const cases: [string, (f: Fixture) => boolean][] = [
      ['event = "auth.second-factor"', (f) => f.event === 'auth.second-factor'],
      ['outcome = "failure"', (f) => f.outcome === 'failure'],
      ['identityId = "list-fixture-b"', (f) => f.identityId === 'list-fixture-b'],
      ['actorId = "list-fixture-actor"', (f) => f.actorId === 'list-fixture-actor'],
      ['sourceAddress = "198.51.100.2"', (f) => f.sourceAddress === '198.51.100.2'],
      [
        'occurredAt >= "2026-01-01T03:00:00Z" and occurredAt < "2026-01-01T07:00:00Z"',
        (f) => f.occurredAt >= '2026-01-01T03' && f.occurredAt < '2026-01-01T07',
      ],
      ['occurredAt = "2026-01-01T09:00:00Z"', (f) => f.occurredAt.startsWith('2026-01-01T09')],
      [
        'event = "auth.login" and outcome = "success" and sourceAddress = "198.51.100.1"',
        (f) => f.event === 'auth.login' && f.outcome === 'success' && f.sourceAddress === '198.51.100.1',
      ],
    ];
    for (const [filter, pick] of cases) {
      const { data } = await list(q(filter, '&limit=500'));
      expect({ filter, ids: ids(data) }).toEqual({ filter, ids: expected(pick) });
    }
    // Events without an actor: here every fixture but those with one, and nothing the admin did.
    const { data: noActor } = await list(q('actorId = null', '&limit=500'));
    expect(noActor.every((e) => e.actorId === undefined)).toBe(true);
    expect(ids(noActor)).toEqual(expect.arrayContaining(expected((f) => f.actorId === undefined)));
    const { data: firstPage, pagination } = await list(q('identityId = "list-fixture-a"'));
    expect(pagination.limit).toBe(10);
    expect(ids(firstPage)).toEqual(expected((f) => f.identityId === 'list-fixture-a'));
  });

  test('paging by cursor visits every event once, in the order of one large page', async () => {
    let last = '';
    for (let i = 0; i < 3; i++)
      last = await createIdentity(admin, { name: `audit-list-page-${i}`, isAdmin: false });
    const all = ids((await listWhen('?limit=500', (d) => d[0]?.identityId === last)).data);
    for (const [limit, filter] of [
      [3, ''],
      [1, ''],
      [4, 'identityId = "list-fixture-a"'],
    ] as const) {
      const seen: string[] = [];
      let cursor: string | null = '';
      while (cursor !== null) {
        const page = await list(`${q(filter, `&limit=${limit}`)}${cursor ? `&cursor=${cursor}` : ''}`);
        expect(page.data.length).toBeLessThanOrEqual(limit);
        seen.push(...ids(page.data));
        cursor = page.pagination.nextCursor;
      }
      const want = filter === '' ? all : expected((f) => f.identityId === 'list-fixture-a');
      expect({ limit, filter, seen }).toEqual({ limit, filter, seen: want });
    }
  });

  test('the last page has no next cursor, also when it is exactly full', async () => {
    const filter = 'identityId = "list-fixture-a"';
    const whole = await list(q(filter, '&limit=6'));
    expect(ids(whole.data)).toEqual(expected((f) => f.identityId === 'list-fixture-a'));
    expect(whole.pagination.nextCursor).toBeNull();

    const first = await list(q(filter, '&limit=3'));
    expect(first.pagination.nextCursor).toEqual(expect.any(String));
    const second = await list(`${q(filter, '&limit=3')}&cursor=${first.pagination.nextCursor}`);
    expect(ids([...first.data, ...second.data])).toEqual(ids(whole.data));
    expect(second.pagination.nextCursor).toBeNull();
  });

  test('following: after the head cursor come exactly the later events, oldest first', async () => {
    const filter = q('event = "identity.created"', '&limit=2');
    const first = await list(filter);
    const head = first.pagination.headCursor;
    const nothing = await list(`${filter}&after=${head}`);
    expect(nothing.data).toEqual([]);
    expect(nothing.pagination.nextCursor).toEqual(expect.any(String));

    const made: string[] = [];
    for (let i = 0; i < 3; i++)
      made.push(await createIdentity(admin, { name: `audit-follow-${i}`, isAdmin: false }));
    // Pages of two: the first full page's cursor is its last event, so nothing comes twice.
    const followed = await follow(filter, nothing.pagination.nextCursor, 3);
    expect(followed.events.map((e) => e.identityId)).toEqual(made);
    // The first head reaches all three at once, and none of the events before it.
    const fromHead = await list(`${q('event = "identity.created"', '&limit=500')}&after=${head}`);
    expect(fromHead.data.map((e) => e.identityId)).toEqual(made);
  });

  test('after=now starts at the head with no event; an aggregated row comes again with its new count', async () => {
    const now = await list('?after=now');
    expect(now.data).toEqual([]);
    expect(now.pagination.nextCursor).toEqual(now.pagination.headCursor);

    // As the trail aggregates a failed login: the row's count grows and its tx moves on.
    await server.app.knex.raw(
      `update audit_events set attempts = attempts + 1, last_at = occurred_at + interval '30 seconds',
         tx = pg_current_xact_id() where id = ?`,
      [fixtureIds[3]],
    );
    const made = await createIdentity(admin, { name: 'audit-after-now', isAdmin: false });
    const { events } = await follow('?limit=500', now.pagination.nextCursor, 2);
    expect(events.map((e) => [e.id, e.event, e.attempts])).toEqual([
      [fixtureIds[3], 'auth.second-factor', 2],
      [expect.any(String), 'identity.created', 1],
    ]);
    expect(events[0].lastAt).toBe('2026-01-01T03:00:30.000Z');
    expect(events[1].identityId).toBe(made);
  });

  test('offset, sort, bad cursors and filters the indexes cannot answer are 400 naming the parameter', async () => {
    const { pagination } = await list('?limit=1');
    const good = pagination.headCursor as string;
    const cases: [string, string][] = [
      ['?offset=0', 'offset'],
      ['?offset=10', 'offset'],
      ['?sort=occurredAt%20desc', 'sort'],
      ['?cursor=garbage', 'cursor'],
      ['?cursor=', 'cursor'],
      [`?cursor=${good}=`, 'cursor'],
      [`?cursor=${Buffer.from('1:2:3').toString('base64url')}`, 'cursor'],
      [`?cursor=${Buffer.from('18446744073709551616:1').toString('base64url')}`, 'cursor'],
      [`?cursor=${Buffer.from('1:9223372036854775808').toString('base64url')}`, 'cursor'],
      [`?cursor=${Buffer.from('-1:1').toString('base64url')}`, 'cursor'],
      [`?cursor=${good}x`, 'cursor'],
      [`?cursor=${'A'.repeat(65)}`, 'cursor'],
      ['?after=later', 'after'],
      [`?after=${good}&cursor=${good}`, 'after'],
      [`?cursor=${good}&cursor=${good}`, 'cursor'],
      ['?limit=0', 'limit'],
      ['?limit=501', 'limit'],
      [q('details = "x"'), 'filter'],
      [q('event != "auth.login"'), 'filter'],
      [q('event contains "auth"'), 'filter'],
      [q('outcome > "a"'), 'filter'],
      [q('occurredAt != "2026-01-01T00:00:00Z"'), 'filter'],
      [q('occurredAt >= "yesterday"'), 'filter'],
      [q('event = 1'), 'filter'],
    ];
    for (const [query, field] of cases) {
      const res = await admin.get(`/audit-events${query}`);
      const error = expectError(res, { status: 400, code: 'COULD_NOT_VALIDATE' });
      expect({ query, field: error.cause?.field }).toEqual({ query, field });
    }
    const refused = expectError(await admin.get(`/audit-events${q('event contains "auth"')}`), {
      status: 400,
      code: 'COULD_NOT_VALIDATE',
    });
    expect(refused.cause.reason).toContain('field "event" takes only =');
  });

  test('admins only: a non-admin gets 403, no credentials 401', async () => {
    const user = await enrolledUpdbUser(server, admin, 'audit-list-user');
    expectError(await managementApi(server, user.token).get('/audit-events'), {
      status: 403,
      code: 'FORBIDDEN',
    });
    expectError(await server.client.get(`${MGMT}/audit-events`), { status: 401, code: 'UNAUTHORIZED' });
  });
});
