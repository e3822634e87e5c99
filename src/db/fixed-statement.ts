import type { Knex } from 'knex';
// knex's own PostgreSQL dialect, extended below (the package declares no types for its path).
// @ts-expect-error -- no declaration file for knex's internal dialect module
import KnexPgClient from 'knex/lib/dialects/postgres/index.js';
import type { Db } from './create-database.js';

/**
 * knex's PostgreSQL client, as the controller's PostgreSQL databases use it. It adds nothing:
 * PGlite's knex client extends the same dialect class, and this subclass is how `runFixed` tells
 * a node-postgres connection, which it may use directly, from PGlite.
 */
export class PooledPgClient extends (KnexPgClient as typeof Knex.Client) {}

/**
 * One name per statement text, module-wide, so two different statements never share a name
 * (node-postgres refuses that). PostgreSQL then parses and plans each once per connection and
 * node-postgres sends only Bind and Execute: on the token paths that is most of PostgreSQL's work
 * per statement (the joined read of a code or refresh token with its grant: ≈ 0.23 ms of its CPU
 * unprepared, ≈ 0.03 ms prepared). Never `select *`: a prepared statement's result columns must
 * not change under a migration.
 */
const names = new Map<string, string>();

function statementName(sql: string): string {
  let name = names.get(sql);
  if (!name) names.set(sql, (name = `svc_${names.size + 1}`));
  return name;
}

/** PostgreSQL's answer when a prepared statement's result columns changed (a migration). */
const isStalePlan = (err: unknown) => (err as { code?: unknown } | null)?.code === '0A000';

/**
 * A statement whose text is a module constant: the statements every login, code exchange and
 * refresh sends. Its `?` placeholders are numbered once, here, and on PostgreSQL it is prepared
 * once per connection under a name of its own.
 */
export interface FixedStatement {
  /** The text as written, with `?` placeholders: what knex's query events report. */
  readonly sql: string;
  /** The same with `$1`, `$2`, … as PostgreSQL takes it. */
  readonly text: string;
  readonly name: string;
}

export function fixedStatement(sql: string): FixedStatement {
  if (/\\\?|\?\?/.test(sql)) throw new Error('a fixed statement has plain ? placeholders only');
  let n = 0;
  return { sql, text: sql.replace(/\?/g, () => `$${++n}`), name: statementName(sql) };
}

/** The connection knex lends: node-postgres's client. */
interface PgConnection {
  query(config: { name?: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

let queryUid = 0;

/**
 * Runs a fixed statement and answers its rows. On PostgreSQL it goes to a connection of knex's pool
 * (or the transaction's own) without knex's query runner, which built, copied and renumbered the
 * same statement on every call: knex's own code and lodash were 5–6 % of the controller's CPU
 * under refresh load (docs/benchmarks.md, "Fixed statements and bounded memory"). knex's query
 * events are still emitted, so query metrics and anything listening to them see every statement.
 * Elsewhere (the embedded database) knex runs it.
 */
export async function runFixed<Row = Record<string, unknown>>(
  db: Db,
  statement: FixedStatement,
  values: unknown[],
): Promise<Row[]> {
  // node-postgres would send an undefined as NULL where knex refuses it: refused on both databases.
  if (values.includes(undefined)) throw new Error(`${statement.sql} - a value is undefined`);
  const client = (db as Knex).client;
  if (!(client instanceof PooledPgClient)) {
    const { rows } = await db.raw(statement.sql, values as Knex.RawBinding[]);
    return rows as Row[];
  }
  // knex's own check, which its transaction client makes in the query runner skipped here: a
  // finished transaction's connection is back in the pool, serving someone else.
  if ((db as Knex.Transaction).isCompleted?.()) throw new Error('the transaction has already ended');
  const connection = (await client.acquireConnection()) as PgConnection;
  const query = {
    sql: statement.sql,
    bindings: values,
    method: 'raw',
    __knexQueryUid: `fixed-${++queryUid}`,
  };
  try {
    client.emit('query', query);
    let result;
    try {
      result = await connection.query({ name: statement.name, text: statement.text, values });
    } catch (err) {
      // Inside a transaction the error has aborted it: nothing more can run there.
      if (!isStalePlan(err) || (client as { transacting?: boolean }).transacting) throw err;
      // A migration by a newer instance changed what the statement returns: run it unprepared,
      // and let the pool replace this connection, whose prepared statement stays stale.
      (connection as { __knex__disposed?: unknown }).__knex__disposed = err;
      result = await connection.query({ text: statement.text, values });
    }
    client.emit('query-response', result, query);
    return result.rows as Row[];
  } catch (err) {
    if (err instanceof Error) err.message = `${statement.sql} - ${err.message}`;
    client.emit('query-error', err, query);
    throw err;
  } finally {
    await client.releaseConnection(connection);
  }
}
