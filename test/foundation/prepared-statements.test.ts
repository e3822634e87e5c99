import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createDatabase, type Database, type Db } from '../../src/db/create-database.js';
import { PREPARED } from '../../src/db/prepared.js';
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

  const read = (k: Db) => k('scratch').where({ id: 1 }).first('id', 'v').options(PREPARED);

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
});
