import type { Knex } from 'knex';

/** The tables a rejected request must never touch (those of the Edge management resources). */
export const BUSINESS_TABLES = [
  'identities',
  'auth_policies',
  'external_jwt_signers',
  'cas',
  'enrollments',
  'authenticators',
  'webhooks',
  'webhook_deliveries',
  'webhook_delivery_attempts',
] as const;

/** Row count and a digest of every row, per business table. */
export async function businessRows(knex: Knex): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const table of BUSINESS_TABLES) {
    const { rows } = (await knex.raw(
      `SELECT count(*)::int AS n, md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS digest FROM ${table} t`,
    )) as { rows: { n: number; digest: string }[] };
    out[table] = `${rows[0]!.n} rows, ${rows[0]!.digest}`;
  }
  return out;
}
