import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Knex } from 'knex';
import type { PgError } from './db-errors.js';
import type { HeldLock, InstanceLock } from './instance-lock.js';

export interface LeaseLockOptions {
  knex: Knex;
  /** The section's row in `instance_locks`. */
  name: string;
  /** How long a lease lasts without renewal: a crashed holder's section is free after this. */
  ttlMs?: number;
  /** How often a holder renews its lease (0: never, which only tests want). */
  renewEveryMs?: number;
  /** How often `acquire` asks again while another instance holds the lease. */
  pollMs?: number;
}

export const LEASE_TTL_MS = 30_000;

/**
 * The lease table, created here as well as by migrations/011_instance_locks.ts: the migrations'
 * own lock needs it before any migration has run. Concurrent creations may collide in the
 * catalog (23505 or 42P07); the table exists either way.
 */
const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS instance_locks (
  name text PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
)`;

async function ensureTable(knex: Knex): Promise<void> {
  try {
    await knex.raw(CREATE_TABLE);
  } catch (err) {
    if (!['23505', '42P07'].includes((err as PgError).code ?? '')) throw err;
  }
}

/**
 * "Only one instance at a time" without advisory locks: one row per section, taken by a single
 * conditional upsert that succeeds only when the row is free or its lease has expired, renewed
 * while the work runs, deleted on release. Times are the database's clock, so instances' clocks
 * may disagree. The cost against an advisory lock: a crashed holder blocks the section until its
 * lease expires instead of at once.
 */
export function createLeaseLock({
  knex,
  name,
  ttlMs = LEASE_TTL_MS,
  renewEveryMs = Math.floor(ttlMs / 3),
  pollMs = 500,
}: LeaseLockOptions): InstanceLock {
  let ready: Promise<void> | undefined;
  const ttl = `${ttlMs} milliseconds`;

  async function take(): Promise<HeldLock | undefined> {
    await (ready ??= ensureTable(knex).catch((err: unknown) => {
      ready = undefined;
      throw err;
    }));
    const holder = `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;
    // The lease counts from before the statement was sent: the database's end is later, so this
    // holder stops counting itself the holder before anyone else can take the lease over.
    const sentAt = Date.now();
    const { rows } = await knex.raw(
      `INSERT INTO instance_locks AS l (name, holder, expires_at)
       VALUES (?, ?, now() + ?::interval)
       ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE l.expires_at <= now()
       RETURNING holder`,
      [name, holder, ttl],
    );
    if (rows.length === 0) return undefined;

    let held = true;
    let confirmedAt = sentAt;
    const renew = async () => {
      const renewSentAt = Date.now();
      try {
        const renewed = await knex('instance_locks')
          .where({ name, holder })
          .update({ expires_at: knex.raw('now() + ?::interval', [ttl]) });
        if (renewed === 0) stop();
        else confirmedAt = renewSentAt;
      } catch {
        // The database is unreachable: the lease still counts until it would have expired.
      }
    };
    const timer = renewEveryMs > 0 ? setInterval(() => void renew(), renewEveryMs) : undefined;
    timer?.unref();
    function stop() {
      held = false;
      if (timer) clearInterval(timer);
    }
    return {
      get held() {
        return held && Date.now() - confirmedAt < ttlMs;
      },
      async release() {
        stop();
        // Only our own row: after an expiry another instance's lease must stay.
        await knex('instance_locks').where({ name, holder }).delete();
      },
    };
  }

  return {
    tryAcquire: take,
    async acquire() {
      for (;;) {
        const held = await take();
        if (held) return held;
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    },
  };
}
