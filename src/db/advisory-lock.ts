import pg from 'pg';
import type { HeldLock, InstanceLock } from './instance-lock.js';

export interface AdvisoryLockOptions {
  connectionString: string;
  /** A 64-bit integer, as a decimal string. */
  key: string;
}

/**
 * A PostgreSQL session advisory lock on a connection of its own, opened for each hold: the lock
 * lives exactly as long as that session, so a crashed holder's lock goes with its connection and
 * no pooled connection is ever handed back still holding it.
 */
export function createAdvisoryLock({ connectionString, key }: AdvisoryLockOptions): InstanceLock {
  async function take(wait: boolean): Promise<HeldLock | undefined> {
    const client = new pg.Client({ connectionString });
    let held = true;
    // A dropped connection must not crash the process; the hold is simply gone.
    client.on('error', () => (held = false));
    client.on('end', () => (held = false));
    await client.connect();
    try {
      if (wait) {
        await client.query('SELECT pg_advisory_lock($1)', [key]);
      } else {
        const { rows } = await client.query('SELECT pg_try_advisory_lock($1) AS taken', [key]);
        if (!rows[0].taken) {
          await client.end();
          return undefined;
        }
      }
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    return {
      get held() {
        return held;
      },
      async release() {
        if (held) await client.query('SELECT pg_advisory_unlock($1)', [key]).catch(() => undefined);
        held = false;
        await client.end().catch(() => undefined);
      },
    };
  }

  return {
    tryAcquire: () => take(false),
    acquire: async () => (await take(true))!,
  };
}
