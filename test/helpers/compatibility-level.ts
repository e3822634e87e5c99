import pg from 'pg';

/** A row's level: its `level` column, else its first value that starts with a number ("025_…"). */
function levelOf(row: Record<string, unknown>): number {
  const value = 'level' in row ? row.level : Object.values(row).find((v) => /^\d+/.test(String(v)));
  return Number.parseInt(String(value), 10);
}

/**
 * The compatibility level a database records (`schema_compatibility`): the lowest migration a
 * release must know to run on it. Undefined where no table records one (code from before the
 * level existed), which raises nothing.
 */
export async function compatibilityLevel(databaseUrl: string): Promise<number | undefined> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT * FROM schema_compatibility');
    const levels = rows.map(levelOf).filter((n) => !Number.isNaN(n));
    return levels.length > 0 ? Math.max(...levels) : undefined;
  } catch (err) {
    // undefined_table: the database has no level.
    if ((err as { code?: string }).code === '42P01') return undefined;
    throw err;
  } finally {
    await client.end();
  }
}
