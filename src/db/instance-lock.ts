/**
 * How instances of one deployment agree that only one of them runs a section (migrations, a
 * janitor pass): a session advisory lock (PostgreSQL), or a lease row for engines without
 * advisory locks (docs/adr/0011-distributed-sql.md).
 */

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
