import type { Knex } from 'knex';

/**
 * The statements knex sends while `run` is pending, aside from the once-a-second work of every
 * instance: the revocation catch-up and webhook delivery (the `webhook_*` tables).
 */
export async function statementsOf<T>(
  knex: Knex,
  run: () => Promise<T>,
): Promise<{ result: T; sql: string[] }> {
  const sql: string[] = [];
  const record = (q: { sql: string }) => sql.push(q.sql);
  knex.on('query', record);
  try {
    const result = await run();
    return { result, sql: sql.filter((s) => !s.includes('"revocations"') && !/\bwebhook_/.test(s)) };
  } finally {
    knex.off('query', record);
  }
}
