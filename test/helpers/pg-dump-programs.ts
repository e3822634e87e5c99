import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

export interface PgDumpPrograms {
  /** The server's major version, e.g. 15. */
  major: number;
  pgDump: string;
  pgRestore: string;
}

/**
 * `pg_dump` and `pg_restore` of the major version the server at `url` runs: an older pg_dump
 * refuses a newer server, and the PATH's may be either (Debian keeps each version's programs in
 * /usr/lib/postgresql/<major>/bin). Throws with the package to install when they are missing.
 */
export async function pgDumpProgramsFor(url: string): Promise<PgDumpPrograms> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let versionNum: number;
  try {
    versionNum = Number((await client.query('SHOW server_version_num')).rows[0].server_version_num);
  } finally {
    await client.end();
  }
  // server_version_num is major * 10000 + minor from PostgreSQL 10 on.
  const major = Math.floor(versionNum / 10000);
  const bin = `/usr/lib/postgresql/${major}/bin`;
  const programs = { major, pgDump: join(bin, 'pg_dump'), pgRestore: join(bin, 'pg_restore') };
  for (const program of [programs.pgDump, programs.pgRestore]) {
    try {
      accessSync(program, constants.X_OK);
    } catch {
      throw new Error(`${program} is not installed: apt-get install postgresql-client-${major}`);
    }
  }
  return programs;
}
