import pg from 'pg';

/**
 * The compatibility level a database records (`schema_compatibility`): the name of the oldest
 * migration code must know to run on it (code whose newest migration sorts before it refuses to
 * start). Undefined where no table records one (code from before the level existed), which
 * raises nothing.
 */
export async function compatibilityLevel(databaseUrl: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT level FROM schema_compatibility');
    const levels = rows.map((r: { level: unknown }) => String(r.level)).sort();
    return levels.at(-1);
  } catch (err) {
    // undefined_table: the database has no level.
    if ((err as { code?: string }).code === '42P01') return undefined;
    throw err;
  } finally {
    await client.end();
  }
}

/** Whether code whose newest migration is `newest` may not run at `level` (names compare byte-wise). */
export const levelIsAbove = (level: string | undefined, newest: string): boolean =>
  level !== undefined && level > newest;
