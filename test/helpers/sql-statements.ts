import type { Knex } from 'knex';

/**
 * The statements knex sends while `run` is pending (the once-a-second revocation catch-up, webhook
 * delivery (the `webhook_*` tables) and the signing key table's read every 3 seconds aside).
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
    const background = (s: string) =>
      s.includes('"revocations"') || /\bwebhook_/.test(s) || /^select \* from "signing_keys"/.test(s);
    return { result, sql: sql.filter((s) => !background(s)) };
  } finally {
    knex.off('query', record);
  }
}
