import { createAdvisoryLock } from './advisory-lock.js';
import type { Database } from './create-database.js';
import { createLeaseLock } from './lease-lock.js';

/**
 * How instances of one deployment agree that only one of them runs a section (migrations, a
 * janitor pass): a session advisory lock (PostgreSQL), or a lease row for engines without
 * advisory locks (docs/adr/0011-distributed-sql.md).
 */
export type InstanceLockKind = 'advisory' | 'lease';

/** A lock this instance holds until `release`. */
export interface HeldLock {
  /** False once the hold is known to be lost (its connection dropped, its lease taken over). */
  readonly held: boolean;
  release(): Promise<void>;
}

/** "Only one instance at a time" for one named section. */
export interface InstanceLock {
  /** Takes the lock if no other instance holds it now; undefined if one does. */
  tryAcquire(): Promise<HeldLock | undefined>;
  /** Waits until the lock is free, then takes it. */
  acquire(): Promise<HeldLock>;
}

/**
 * The sections that take a lock: a lease row's name, and an advisory key (any constant every
 * instance shares; the migrations' key is the one earlier releases took, so that a rolling upgrade
 * still serialises their migrations against ours).
 */
export const LOCK_NAMES = {
  migrations: { name: 'migrations', advisoryKey: '8319395793566789479' },
  janitor: { name: 'janitor', advisoryKey: '8319395793567344244' },
  oidcJanitor: { name: 'oidc-janitor', advisoryKey: '8319395793567344245' },
} as const;

export type LockName = keyof typeof LOCK_NAMES;

/** A lock that is always free: the embedded database serves one process (the data-dir lock file). */
const singleProcessLock: InstanceLock = {
  tryAcquire: async () => ({ held: true, release: async () => undefined }),
  acquire: async () => ({ held: true, release: async () => undefined }),
};

/** The configured kind of lock for `section` on this database. */
export function instanceLockFor(database: Database, section: LockName): InstanceLock {
  const { target } = database;
  if (target.kind === 'pglite') return singleProcessLock;
  const { name, advisoryKey } = LOCK_NAMES[section];
  return target.instanceLock === 'lease'
    ? createLeaseLock({ knex: database.knex, name })
    : createAdvisoryLock({ connectionString: target.connectionString, key: advisoryKey });
}

/** Runs `work` under the lock, waiting for it. */
export async function withInstanceLock<T>(lock: InstanceLock, work: () => Promise<T>): Promise<T> {
  const held = await lock.acquire();
  try {
    return await work();
  } finally {
    await held.release();
  }
}

/** Runs `work` if the lock is free now; `{ ran: false }` when another instance holds it. */
export async function ifInstanceLockFree<T>(
  lock: InstanceLock,
  work: () => Promise<T>,
): Promise<{ ran: true; value: T } | { ran: false }> {
  const held = await lock.tryAcquire();
  if (!held) return { ran: false };
  try {
    return { ran: true, value: await work() };
  } finally {
    await held.release();
  }
}
