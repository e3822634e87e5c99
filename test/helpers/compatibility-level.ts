import { readCompatibilityLevel } from '../../src/db/compatibility-level.js';
import { createDatabase } from '../../src/db/create-database.js';

/**
 * The compatibility level a PostgreSQL database records, read as the controller reads it;
 * undefined where none is recorded (a database of code from before the level existed).
 */
export async function compatibilityLevel(databaseUrl: string): Promise<string | undefined> {
  const db = createDatabase({ kind: 'pg', connectionString: databaseUrl, poolMax: 1 });
  try {
    return (await readCompatibilityLevel(db.knex))?.level;
  } finally {
    await db.knex.destroy();
  }
}

/** Whether code whose newest migration is `newest` may not run at `level` (names compare byte-wise). */
export const levelIsAbove = (level: string | undefined, newest: string): boolean =>
  level !== undefined && level > newest;
