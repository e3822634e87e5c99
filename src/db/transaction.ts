import type { Knex } from 'knex';
import { withConstraintErrors } from './constraint-errors.js';

/** Work to run once the transaction has committed, e.g. publishing a revocation. */
export type AfterCommit = (hook: () => Promise<void> | void) => void;

export interface TransactionOptions {
  /** The transaction deletes rows others may name: a foreign key violation means "still in use". */
  removes?: boolean;
  /**
   * Run `work` again from the start, up to this many times, when PostgreSQL ends the transaction
   * as a deadlock's victim (nothing of it was written). For work that may meet a token request in
   * flight: a refresh locks its refresh token, its login's rows and its API session in one
   * statement, in an order no other writer can share, so ending a session may deadlock with it.
   */
  deadlockRetries?: number;
}

/** For ending sessions, which may meet a refresh of the same session in flight. */
export const RETRY_DEADLOCKS: TransactionOptions = { deadlockRetries: 3 };

/** PostgreSQL chose this transaction as the victim of a deadlock (SQLSTATE 40P01). */
const isDeadlock = (err: unknown) => (err as { code?: unknown } | null)?.code === '40P01';

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
  for (let attempt = 0; ; attempt++) {
    const hooks = new Set<() => Promise<void> | void>();
    let result: T;
    try {
      result = await withConstraintErrors(
        () => knex.transaction((trx) => work(trx, (hook) => hooks.add(hook))),
        options,
      );
    } catch (err) {
      if (isDeadlock(err) && attempt < (options.deadlockRetries ?? 0)) continue;
      throw err;
    }
    for (const hook of hooks) await hook();
    return result;
  }
}
