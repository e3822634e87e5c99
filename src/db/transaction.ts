import type { Knex } from 'knex';
import { withConstraintErrors } from './constraint-errors.js';

/** Work to run once the transaction has committed, e.g. publishing a revocation. */
export type AfterCommit = (hook: () => Promise<void> | void) => void;

export interface TransactionOptions {
  /** The transaction deletes rows others may name: a foreign key violation means "still in use". */
  removes?: boolean;
}

/**
 * The one write path of the services: `work` runs in a transaction, known constraint violations
 * become client errors (`constraint-errors.ts`), and hooks registered with `afterCommit` run in
 * order after a successful commit, never after a rollback. A hook registered twice runs once.
 */
export async function inTransaction<T>(
  knex: Knex,
  work: (trx: Knex.Transaction, afterCommit: AfterCommit) => Promise<T>,
  options: TransactionOptions = {},
): Promise<T> {
  const hooks = new Set<() => Promise<void> | void>();
  const result = await withConstraintErrors(
    () => knex.transaction((trx) => work(trx, (hook) => hooks.add(hook))),
    options,
  );
  for (const hook of hooks) await hook();
  return result;
}
