import type { Context, Next } from 'koa';
import { AppError } from '../errors/app-error.js';
import { clientAddressKey } from '../services/auth/client-address-key.js';

export interface RateLimitSettings {
  enabled: boolean;
  perSecond: number;
  burst: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

// Bounds memory under a flood of distinct addresses; the oldest buckets go first.
const MAX_BUCKETS = 100_000;

/**
 * Token buckets per client address, in memory per process (docs/operations.md): `perSecond`
 * sustained, bursts of `burst`. The address is the socket's (proxy headers are not trusted), an
 * IPv6 one counted per /64 like the login ceiling.
 */
export function createRateLimiter(settings: RateLimitSettings, now: () => number = Date.now) {
  const buckets = new Map<string, Bucket>();
  return {
    /** Seconds to wait, or 0 when the request may proceed (and is counted). */
    take(key: string): number {
      if (!settings.enabled) return 0;
      const t = now();
      const b = buckets.get(key) ?? { tokens: settings.burst, at: t };
      b.tokens = Math.min(settings.burst, b.tokens + ((t - b.at) / 1000) * settings.perSecond);
      b.at = t;
      buckets.delete(key);
      if (buckets.size >= MAX_BUCKETS) buckets.delete(buckets.keys().next().value!);
      buckets.set(key, b);
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return 0;
      }
      return Math.max(1, Math.ceil((1 - b.tokens) / settings.perSecond));
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;

/** Edge-envelope form: 429 RATE_LIMITED with Retry-After. */
export function rateLimit(limiter: RateLimiter) {
  return async function rateLimitMiddleware(ctx: Context, next: Next) {
    const wait = limiter.take(clientAddressKey(ctx.ip));
    if (wait > 0) throw new AppError('RATE_LIMITED', { headers: { 'retry-after': String(wait) } });
    return next();
  };
}
