import type { Knex } from 'knex';
import { RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';

/** What a limiter is built from: its window and, for a shared store, the limiter to fall back on. */
export interface LimiterOptions {
  /** Keeps the counts of different limits apart in one table. */
  keyPrefix: string;
  points: number;
  duration: number;
  insuranceLimiter?: RateLimiterAbstract;
}

/**
 * The `rate_limits` table (migrations/010_rate_limits.ts), read and written by rate-limiter-flexible's
 * PostgreSQL store: one atomic upsert per counted request, so every instance sees the same count.
 * The store deletes rows an hour past their window every five minutes on its own.
 */
export const rateLimitsRepository = {
  limiter(knex: Knex, options: LimiterOptions): RateLimiterAbstract {
    return new RateLimiterPostgres({
      ...options,
      storeClient: knex,
      storeType: 'knex',
      tableName: 'rate_limits',
      tableCreated: true,
    });
  },
};
