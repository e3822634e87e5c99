import type { Db } from './create-database.js';

/**
 * Takes a PostgreSQL transaction-scoped advisory lock: held until `trx` commits or rolls back, so
 * concurrent starts or requests doing the same check-then-insert run one after another. `key` is
 * a 64-bit integer, or a name hashed to one by the database (`hashtext`).
 */
export async function advisoryXactLock(trx: Db, key: { id: bigint } | { name: string }): Promise<void> {
  if ('id' in key) await trx.raw('SELECT pg_advisory_xact_lock(?)', [key.id.toString()]);
  else await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [key.name]);
}
