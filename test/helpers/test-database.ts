import pg from 'pg';
import { randomBytes } from 'node:crypto';

/**
 * The database a test server uses: PGlite by default; a fresh PostgreSQL database per call when
 * TEST_DATABASE_URL is set (CI runs every suite both ways).
 */
export const usingPostgres = Boolean(process.env.TEST_DATABASE_URL);

export async function createTestDatabaseUrl(): Promise<
  { url: string; drop: () => Promise<void> } | undefined
> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return undefined;
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
