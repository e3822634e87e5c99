import type { Knex } from 'knex';
// knex's own PostgreSQL dialect, extended below (the package declares no types for its path).
// @ts-expect-error -- no declaration file for knex's internal dialect module
import KnexPgClient from 'knex/lib/dialects/postgres/index.js';

/**
 * Query options that ask for a statement prepared once per connection: node-postgres then sends
 * PostgreSQL only Bind and Execute for it, so PostgreSQL skips parsing it and, after a few runs,
 * planning it. On the token paths that is most of PostgreSQL's work per statement (the joined read
 * of a code or refresh token with its grant: ≈ 0.23 ms of its CPU unprepared, ≈ 0.03 ms
 * prepared). Never for `select *`: a prepared statement's result columns must not change under a
 * migration. PGlite ignores it.
 */
export const PREPARED = { prepare: true } as const;

/**
 * One name per statement text, module-wide: knex gives each transaction a client of its own, made
 * from the prototype, so the names cannot live on the client.
 */
const names = new Map<string, string>();

/** PostgreSQL's answer when a prepared statement's result columns changed (a migration). */
const isStalePlan = (err: unknown) => (err as { code?: unknown } | null)?.code === '0A000';

type QueryFn = (connection: unknown, obj: unknown) => Promise<unknown>;
const knexQuery = (KnexPgClient.prototype as { _query: QueryFn })._query;

/**
 * knex's PostgreSQL client, naming every statement marked PREPARED after its exact text, so two
 * different statements can never share a name (node-postgres refuses that), whatever builder
 * produced them.
 */
export class PreparingPgClient extends (KnexPgClient as typeof Knex.Client) {
  async _query(
    connection: unknown,
    obj: { sql: string; options?: Record<string, unknown> },
  ): Promise<unknown> {
    if (obj.options?.prepare !== true) return knexQuery.call(this, connection, obj);
    let name = names.get(obj.sql);
    if (!name) names.set(obj.sql, (name = `svc_${names.size + 1}`));
    try {
      return await knexQuery.call(this, connection, { ...obj, options: { name } });
    } catch (err) {
      if (!isStalePlan(err)) throw err;
      // A migration by a newer instance changed what the statement returns: run it unprepared,
      // and let the pool replace this connection, whose prepared statement stays stale.
      (connection as { __knex__disposed?: unknown }).__knex__disposed = err;
      return knexQuery.call(this, connection, { ...obj, options: {} });
    }
  }
}
