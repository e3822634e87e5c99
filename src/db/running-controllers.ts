import type { Knex } from 'knex';
import { APPLICATION_NAME } from './create-database.js';

/**
 * How many connections controllers hold on this PostgreSQL database now (every controller
 * connection carries APPLICATION_NAME; a tool that must run alone connects under another name).
 */
export async function controllerConnections(knex: Knex): Promise<number> {
  const { rows } = await knex.raw<{ rows: { n: number }[] }>(
    `select count(*)::int as n from pg_stat_activity
      where datname = current_database() and application_name = ? and pid <> pg_backend_pid()`,
    [APPLICATION_NAME],
  );
  return rows[0]!.n;
}
