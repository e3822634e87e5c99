export interface CpuSample {
  /** Milliseconds, the database's share included. */
  totalMs: number;
  /** The share of an external database's backends (0 when the database is in the process). */
  databaseMs: number;
  /** SQL statements sent to PostgreSQL so far (undefined: not counted, e.g. the embedded database). */
  statements?: { all: number; transactionControl: number };
}

/** A server under load, running as its own process on 127.0.0.1. */
export interface Target {
  /** `service` or `baseline (a)` … as printed in errors. */
  label: string;
  /** `https://127.0.0.1:<port>` */
  origin: string;
  /** PEM the load generator trusts for this target. */
  ca: string;
  /** CPU (user + system) used so far by everything that serves this target. */
  cpu(): Promise<CpuSample>;
  stop(): Promise<void>;
}

export interface BenchUser {
  username: string;
  password: string;
}

/** Several users, so that nothing per user (locks, counters, caches) serialises the workers. */
export function benchUsers(count: number): BenchUser[] {
  return Array.from({ length: count }, (_, i) => ({
    username: `bench-user-${i + 1}`,
    password: `Bench-pw-${i + 1}-${'x'.repeat(8)}!`,
  }));
}
