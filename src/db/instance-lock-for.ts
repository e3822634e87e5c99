import { createAdvisoryLock } from './advisory-lock.js';
import type { Database } from './create-database.js';
import type { InstanceLock } from './instance-lock.js';
import { createLeaseLock } from './lease-lock.js';

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
