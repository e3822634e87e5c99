import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createDatabase, type Database, type Db } from '../../src/db/create-database.js';
import { fixedStatement, runFixed } from '../../src/db/fixed-statement.js';
import { inTransaction } from '../../src/db/transaction.js';
import { createTestDatabaseUrl, describeWithPostgres } from '../helpers/test-database.js';

describeWithPostgres('prepared statements on PostgreSQL', () => {
  let database: { url: string; drop: () => Promise<void> };
  let db: Database;
  // One connection: every run below meets the statement prepared by the one before.
  beforeAll(async () => {
    database = (await createTestDatabaseUrl())!;
    db = createDatabase({ kind: 'pg', connectionString: database.url, poolMax: 1 });
    await db.knex.raw('CREATE TABLE scratch (id int PRIMARY KEY, v int)');
    await db.knex('scratch').insert({ id: 1, v: 7 });
  });
  afterAll(async () => {
    await db.knex.destroy();
    await database.drop();
  });

  const READ = fixedStatement('select "id", "v" from "scratch" where "id" = ?');
  const read = async (k: Db) => (await runFixed(k, READ, [1]))[0];

  test('are prepared once per connection and run the same inside and outside a transaction', async () => {
    expect(await read(db.knex)).toEqual({ id: 1, v: 7 });
    expect(await inTransaction(db.knex, (trx) => read(trx))).toEqual({ id: 1, v: 7 });
    const { rows } = await db.knex.raw(
      'SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE \'%from "scratch"%\'',
    );
    expect(rows[0].n).toBe(1);
  });

  test('a statement whose result changed under a migration still answers, on a fresh connection', async () => {
    expect(await read(db.knex)).toEqual({ id: 1, v: 7 });
    await db.knex.raw('ALTER TABLE scratch ALTER COLUMN v TYPE text');
    expect(await read(db.knex)).toEqual({ id: 1, v: '7' });
    expect(await read(db.knex)).toEqual({ id: 1, v: '7' });
  });

  test('a failing statement names itself, and knex reports it as a failed query', async () => {
    const errors: string[] = [];
    const onError = (err: Error) => errors.push(err.message);
    db.knex.on('query-error', onError);
    try {
      const bad = fixedStatement('select "id" from "scratch" where "id" = ?::int');
      await expect(runFixed(db.knex, bad, ['not a number'])).rejects.toThrow(
        /^select "id" from "scratch" where "id" = \?::int - invalid input syntax/,
      );
    } finally {
      db.knex.off('query-error', onError);
    }
    expect(errors).toHaveLength(1);
    expect(await read(db.knex)).toEqual({ id: 1, v: '7' }); // the connection went back to the pool
  });

  test('an undefined value is refused, not sent as NULL', async () => {
    await expect(runFixed(db.knex, READ, [undefined])).rejects.toThrow(/a value is undefined/);
  });
});
