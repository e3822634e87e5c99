import { describe, test } from '@jest/globals';
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

const SKIP_REASON = '(skipped: needs PostgreSQL, set TEST_DATABASE_URL)';

/** Straight to stderr: jest drops the console output of a suite whose every test is skipped. */
function warnSkipped(title: string): void {
  process.stderr.write(`skipped on PGlite: ${title} ${SKIP_REASON}\n`);
}

/**
 * A suite that needs PostgreSQL itself (several processes on one database, LISTEN/NOTIFY): on
 * PGlite it is skipped visibly, with the reason in its title and a warning, never silently.
 */
export function describeWithPostgres(title: string, fn: () => void): void {
  if (usingPostgres) return describe(title, fn);
  warnSkipped(title);
  describe.skip(`${title} ${SKIP_REASON}`, fn);
}

/** One test that needs PostgreSQL; see describeWithPostgres. */
export function testWithPostgres(title: string, fn: () => Promise<void>, timeout?: number): void {
  if (usingPostgres) return test(title, fn, timeout);
  warnSkipped(title);
  test.skip(`${title} ${SKIP_REASON}`, fn);
}
