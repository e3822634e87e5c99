import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import knexFactory, { type Knex } from 'knex';
import ClientPgLite from 'knex-pglite';
import { isAppError } from '../errors/app-error.js';
import { applyListQuery, runListQuery } from '../db/list-query.js';
import type { ListFields } from './list-filter.js';
import { parseListQuery } from './list-query.js';

const fields: ListFields = {
  id: { column: 'id', type: 'string' },
  name: { column: 'name', type: 'string' },
  externalId: { column: 'external_id', type: 'string' },
  isAdmin: { column: 'is_admin', type: 'boolean' },
  version: { column: 'version', type: 'number' },
  createdAt: { column: 'created_at', type: 'datetime' },
  secret: { column: 'secret', type: 'string', sortable: false },
};

const parse = (query: Record<string, unknown>, defaultSort?: string) =>
  parseListQuery(query, fields, defaultSort);
const filter = (text: string) => parse({ filter: text }).filter;

/** Asserts a COULD_NOT_VALIDATE naming `field`, with a reason matching `reason`. */
function expectInvalid(run: () => unknown, field: string, reason: RegExp): void {
  let caught: unknown;
  try {
    run();
  } catch (err) {
    caught = err;
  }
  if (!isAppError(caught)) throw new Error(`expected an AppError, got ${String(caught)}`);
  expect(caught.code).toBe('COULD_NOT_VALIDATE');
  expect(caught.status).toBe(400);
  expect(caught.clientCause?.field).toBe(field);
  expect(caught.clientCause?.reason).toMatch(reason);
}

describe('parseListQuery: limit, offset, sort', () => {
  it('uses limit 10, offset 0, no sort and no filter when nothing is given', () => {
    expect(parse({})).toEqual({ limit: 10, offset: 0, sort: [], filter: [] });
  });

  it('accepts limits from 1 to 500 and any non-negative offset', () => {
    expect(parse({ limit: '1', offset: '0' })).toMatchObject({ limit: 1, offset: 0 });
    expect(parse({ limit: '500', offset: '12345' })).toMatchObject({ limit: 500, offset: 12345 });
  });

  it.each(['0', '501', '1.5', '-1', 'abc', '', ' 5', '1e2', '99999999999999999999'])(
    'rejects limit %j naming limit',
    (limit) => expectInvalid(() => parse({ limit }), 'limit', /from 1 to 500/),
  );

  it.each(['-1', '1.0', 'x', ''])('rejects offset %j naming offset', (offset) =>
    expectInvalid(() => parse({ offset }), 'offset', /non-negative integer/),
  );

  it('rejects a parameter given twice', () => {
    expectInvalid(() => parse({ limit: ['5', '6'] }), 'limit', /once/);
    expectInvalid(() => parse({ filter: ['name = "a"', 'name = "b"'] }), 'filter', /once/);
  });

  it('parses comma-separated sort keys with optional case-insensitive directions', () => {
    expect(parse({ sort: 'name desc, isAdmin ,createdAt ASC' }).sort).toEqual([
      { column: 'name', direction: 'desc' },
      { column: 'is_admin', direction: 'asc' },
      { column: 'created_at', direction: 'asc' },
    ]);
  });

  it('falls back to the default sort when sort is absent or blank', () => {
    const expected = [{ column: 'name', direction: 'asc' }];
    expect(parse({}, 'name')).toMatchObject({ sort: expected });
    expect(parse({ sort: '  ' }, 'name')).toMatchObject({ sort: expected });
  });

  it('treats an invalid default sort as a programming error, not a 400', () => {
    expect(() => parse({}, 'nope')).toThrow(/invalid defaultSort/);
    expect(isAppError(catchError(() => parse({}, 'nope')))).toBe(false);
  });

  it.each([
    ['unknown', /unknown field "unknown" in item 1/],
    ['constructor', /unknown field "constructor"/],
    ['__proto__', /unknown field "__proto__"/],
    ['name sideways', /direction "sideways" in item 1 must be asc or desc/],
    ['name desc extra', /item 1 must be/],
    ['name,', /item 2 is empty/],
    ['name, name desc', /given twice/],
    ['secret', /not sortable/],
  ])('rejects sort %j naming sort', (sort, reason) => expectInvalid(() => parse({ sort }), 'sort', reason));
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('parseListQuery: filter', () => {
  it('parses equality, inequality, contains and literals joined by case-insensitive and', () => {
    expect(filter('name = "a" AND isAdmin != false and externalId contains "x" aNd version = -2.5')).toEqual([
      { column: 'name', op: '=', value: 'a' },
      { column: 'is_admin', op: '!=', value: false },
      { column: 'external_id', op: 'contains', value: 'x' },
      { column: 'version', op: '=', value: -2.5 },
    ]);
  });

  it('accepts keywords in any case and no whitespace around operators', () => {
    expect(filter('isAdmin=TRUE and externalId!=NULL and name CONTAINS "b"')).toEqual([
      { column: 'is_admin', op: '=', value: true },
      { column: 'external_id', op: '!=', value: null },
      { column: 'name', op: 'contains', value: 'b' },
    ]);
  });

  it('decodes \\" and \\\\ escapes inside strings', () => {
    expect(filter('name = "say \\"hi\\" \\\\ bye"')[0]?.value).toBe('say "hi" \\ bye');
  });

  it('accepts a full ISO 8601 date-time or null for datetime fields', () => {
    expect(filter('createdAt = "2024-02-29T23:59:59.123456+01:00"')[0]?.value).toBe(
      '2024-02-29T23:59:59.123456+01:00',
    );
    expect(filter('createdAt != null')[0]).toEqual({ column: 'created_at', op: '!=', value: null });
  });

  it('parses <, <=, >, >= on date-time fields, RFC 3339 in either case, with or without spaces', () => {
    expect(filter('createdAt >= "2026-11-01T00:00:00Z" and createdAt<"2026-12-01t00:00:00.5z"')).toEqual([
      { column: 'created_at', op: '>=', value: '2026-11-01T00:00:00Z' },
      { column: 'created_at', op: '<', value: '2026-12-01t00:00:00.5z' },
    ]);
    expect(
      filter('createdAt > "2026-11-01T00:00:00+02:00" and createdAt <= "2026-11-02T00:00:00-05:30"'),
    ).toEqual([
      { column: 'created_at', op: '>', value: '2026-11-01T00:00:00+02:00' },
      { column: 'created_at', op: '<=', value: '2026-11-02T00:00:00-05:30' },
    ]);
  });

  it.each([
    ['name > "a"', /field "name" does not support > \(only date-time fields do\) at character 8/],
    ['version <= 3', /field "version" does not support <=/],
    ['isAdmin < true', /field "isAdmin" does not support </],
    ['createdAt >= null', /field "createdAt" needs a date-time such as "2024-01-31T12:00:00Z" after >=/],
    ['createdAt > 5', /field "createdAt" needs a date-time/],
    ['createdAt < "2026-11-01"', /field "createdAt" needs a date-time .* after </],
    ['createdAt < "2026-11-01 00:00:00Z"', /field "createdAt" needs a date-time/],
    ['createdAt < "2026-11-31T00:00:00Z"', /field "createdAt" needs a date-time/],
    ['createdAt < "2026-11-01T00:00:00"', /field "createdAt" needs a date-time/],
    ['createdAt < "yesterday"', /field "createdAt" needs a date-time/],
    ['createdAt => "2026-11-01T00:00:00Z"', /expected a quoted string.*found ">" at character 12/],
    ['createdAt >> "2026-11-01T00:00:00Z"', /found ">" at character 12/],
    ['createdAt <> "2026-11-01T00:00:00Z"', /found ">" at character 12/],
  ])('rejects range filter %j naming the field', (text, reason) =>
    expectInvalid(() => filter(text), 'filter', reason),
  );

  it('treats a blank filter as no filter', () => {
    expect(filter('   ')).toEqual([]);
  });

  it.each([
    ['nope = "x"', /unknown field "nope" at character 1/],
    ['constructor = "x"', /unknown field "constructor"/],
    ['name = "x" and toString = "y"', /unknown field "toString" at character 16/],
    ['name "x"', /expected =, !=, <, <=, >, >= or contains, found a string at character 6/],
    ['name', /expected =, !=, <, <=, >, >= or contains, found the end of the filter at character 5/],
    ['name =', /expected a quoted string.*found the end of the filter at character 7/],
    ['name = x', /found "x" at character 8/],
    ['name = "abc', /unterminated string starting at character 8/],
    ['name = "abc\\', /unterminated string starting at character 8/],
    ['name = "a\\nb"', /unknown escape .* at character 10/],
    ['name = "a\u0000b"', /NUL character in string at character 10/],
    ['name = "a" "b"', /expected "and" or the end of the filter, found a string at character 12/],
    ['name = "a" or name = "b"', /expected "and".*found "or" at character 12/],
    ['name = "a" and', /expected a field name, found the end of the filter at character 15/],
    ['and name = "a"', /unknown field "and" at character 1/],
    ['= "a"', /expected a field name, found "=" at character 1/],
    ['name == "a"', /found "=" at character 7/],
    ['name ~ "a"', /unexpected character "~" at character 6/],
    ['name = "a"; drop table x', /unexpected character ";" at character 11/],
    ['name = (1)', /unexpected character "\(" at character 8/],
    ['version = 12abc', /malformed number at character 11/],
    ['version = 1.', /malformed number at character 11/],
    [`version = ${'9'.repeat(40)}`, /number too long at character 11/],
    ['isAdmin contains "t"', /field "isAdmin" does not support contains/],
    ['version contains "1"', /field "version" does not support contains/],
    ['name contains null', /field "name" needs a quoted string after contains/],
    ['name contains 5', /needs a quoted string/],
    ['isAdmin = "true"', /field "isAdmin" accepts only true or false at character 11/],
    ['isAdmin = null', /accepts only true or false/],
    ['isAdmin = 1', /accepts only true or false/],
    ['name = true', /field "name" accepts only a string or null/],
    ['name = 5', /accepts only a string or null/],
    ['version = "5"', /field "version" accepts only a number or null/],
    ['createdAt = "yesterday"', /field "createdAt" accepts only null or a date-time/],
    ['createdAt = "2023-02-29T00:00:00Z"', /accepts only null or a date-time/],
    ['createdAt = "2024-01-31T24:00:00Z"', /accepts only null or a date-time/],
    ['createdAt = "0000-01-01T00:00:00Z"', /accepts only null or a date-time/],
    ['createdAt = "2024-01-31"', /accepts only null or a date-time/],
  ])('rejects filter %j with a reason giving the position', (text, reason) =>
    expectInvalid(() => filter(text), 'filter', reason),
  );

  it('rejects a filter longer than 4 KiB', () => {
    expectInvalid(() => filter(`name = "${'a'.repeat(4096)}"`), 'filter', /at most 4096 bytes/);
    expectInvalid(() => filter(`name = "${'é'.repeat(2100)}"`), 'filter', /at most 4096 bytes/);
  });

  it('answers hostile inputs near the size limit quickly', () => {
    const hostile = [
      '"'.repeat(4096),
      '\\'.repeat(4096),
      `name = "${'\\"'.repeat(2000)}`,
      'name = "a" and '.repeat(273),
      '('.repeat(4096),
      '-'.repeat(4096),
      `version = ${'1'.repeat(4000)}`,
    ];
    const started = Date.now();
    for (const text of hostile) expectInvalid(() => filter(text), 'filter', /at character \d+/);
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('parses many clauses up to the size limit', () => {
    const text = Array.from({ length: 200 }, (_, i) => `name != "n${i}"`).join(' and ');
    expect(filter(text)).toHaveLength(200);
  });
});

describe('runListQuery against PostgreSQL (PGlite)', () => {
  let db: Knex;
  const table = 'list_query_test';
  const base = () => db(table).select('id', 'name');
  const run = async (query: Record<string, unknown>, defaultSort?: string) => {
    const q = parseListQuery(query, fields, defaultSort);
    const page = await runListQuery<{ id: string; name: string }>(base(), q, 'id');
    return { rows: page.items, totalCount: page.pagination.totalCount };
  };
  const names = (rows: { name: string }[]) => rows.map((row) => row.name);

  beforeAll(async () => {
    db = knexFactory({ client: ClientPgLite, dialect: 'postgres', connection: {} });
    await db.schema.createTable(table, (t) => {
      t.text('id').primary();
      t.text('name').notNullable();
      t.text('external_id');
      t.boolean('is_admin').notNullable();
      t.integer('version').notNullable();
      t.timestamp('created_at', { useTz: true }).notNullable();
      t.text('secret');
    });
    await db(table).insert([
      row('1', 'Alice', 'ext-a', true, 1, '2024-01-01T00:00:00Z'),
      row('2', 'bob', null, false, 2, '2024-01-02T00:00:00Z'),
      row('3', '100% real', 'ext-c', false, 3, '2024-01-03T00:00:00Z'),
      row('4', 'a_b', null, false, 3, '2024-01-04T00:00:00Z'),
      row('5', 'axb', 'ext-e', true, 5, '2024-01-05T00:00:00Z'),
      row('6', 'back\\slash', null, false, 6, '2024-01-06T00:00:00Z'),
      row('7', "O'Brien", 'ext-g', false, 7, '2024-01-07T00:00:00Z'),
    ]);
  });

  afterAll(async () => {
    await db?.destroy();
  });

  function row(
    id: string,
    name: string,
    externalId: string | null,
    isAdmin: boolean,
    version: number,
    at: string,
  ) {
    return { id, name, external_id: externalId, is_admin: isAdmin, version, created_at: at, secret: 's' };
  }

  it('pages sorted rows and counts all matches', async () => {
    // Sorted on a number: text order depends on the database collation.
    const result = await run({ sort: 'version desc', limit: '2', offset: '1' });
    expect(names(result.rows)).toEqual(['back\\slash', 'axb']);
    expect(result.totalCount).toBe(7);
  });

  it('returns an empty page but the full count past the end', async () => {
    const result = await run({ offset: '100' });
    expect(result).toEqual({ rows: [], totalCount: 7 });
  });

  it('counts only filtered rows and applies the default sort with the caller tiebreak', async () => {
    const result = await run({ filter: 'isAdmin = false', limit: '2' }, 'version desc');
    expect(names(result.rows)).toEqual(["O'Brien", 'back\\slash']);
    expect(result.totalCount).toBe(5);
  });

  it('breaks ties with the caller tiebreak for stable pages', async () => {
    const result = await run({ filter: 'version = 3', sort: 'version' });
    expect(result.rows.map((r) => r.id)).toEqual(['3', '4']);
  });

  it('matches contains case-insensitively', async () => {
    const result = await run({ filter: 'name contains "ALI"' });
    expect(names(result.rows)).toEqual(['Alice']);
  });

  it.each([
    ['%', ['100% real']],
    ['_', ['a_b']],
    ['a_b', ['a_b']],
    ['\\\\', ['back\\slash']],
    ["'", ["O'Brien"]],
  ])('matches contains %j literally', async (value, expected) => {
    const result = await run({ filter: `name contains "${value}"` });
    expect(names(result.rows)).toEqual(expected);
    expect(result.totalCount).toBe(expected.length);
  });

  it('matches SQL-injection-looking values as plain text, which matches nothing', async () => {
    for (const value of ["x' or '1'='1", "'; drop table list_query_test; --", 'x\\" or 1=1 --']) {
      const result = await run({ filter: `name = "${value}"` });
      expect(result).toEqual({ rows: [], totalCount: 0 });
      const contains = await run({ filter: `externalId contains "${value}"` });
      expect(contains.totalCount).toBe(0);
    }
    const [{ n }] = (await db(table).count({ n: '*' })) as { n: string | number }[];
    expect(Number(n)).toBe(7);
  });

  it('treats != as "distinct from", so rows with NULL are included', async () => {
    const result = await run({ filter: 'externalId != "ext-a"' });
    expect(result.totalCount).toBe(6);
  });

  it('filters on null, booleans, numbers and date-times together', async () => {
    const nulls = await run({ filter: 'externalId = null and isAdmin = false' });
    expect(names(nulls.rows)).toEqual(['bob', 'a_b', 'back\\slash']);
    const notNull = await run({ filter: 'externalId != null and isAdmin != true' });
    expect(names(notNull.rows)).toEqual(['100% real', "O'Brien"]);
    const dated = await run({ filter: 'createdAt = "2024-01-02T01:00:00+01:00"' });
    expect(names(dated.rows)).toEqual(['bob']);
  });

  it('selects date-time ranges, bounds included or not, in any offset and case', async () => {
    const range = await run({
      filter: 'createdAt >= "2024-01-02T00:00:00Z" and createdAt < "2024-01-04T01:00:00+01:00"',
    });
    expect(names(range.rows)).toEqual(['bob', '100% real']);
    expect(range.totalCount).toBe(2);
    const after = await run({ filter: 'createdAt > "2024-01-06t00:00:00z"' });
    expect(names(after.rows)).toEqual(["O'Brien"]);
    const upTo = await run({ filter: 'createdAt <= "2024-01-01T00:00:00.000001Z"' });
    expect(names(upTo.rows)).toEqual(['Alice']);
  });

  it('compares integer columns with fractional or huge numbers without a database error', async () => {
    expect((await run({ filter: 'version = 2.5' })).totalCount).toBe(0);
    expect((await run({ filter: `version != ${'9'.repeat(30)}` })).totalCount).toBe(7);
  });

  it('leaves the caller query untouched and lets the caller add a tiebreak to the page', async () => {
    const qb = base();
    const { page, count } = applyListQuery(qb, parseListQuery({ filter: 'isAdmin = true' }, fields));
    page.orderBy('id', 'desc');
    expect(names(await page)).toEqual(['axb', 'Alice']);
    // pg returns bigint counts as strings, PGlite as numbers.
    expect(Number(((await count) as { count: string | number }[])[0]?.count)).toBe(2);
    expect(await qb).toHaveLength(7);
  });
});
