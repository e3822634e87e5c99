import type { Context, Next } from 'koa';
import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from '../errors/app-error.js';
import { clientAddressKey } from '../services/auth/client-address-key.js';
import { clientAddress } from './request-context.js';

export interface RateLimitSettings {
  enabled: boolean;
  perSecond: number;
  burst: number;
}

/** Builds a limiter on a store shared by every instance, given its window and its fallback. */
export type SharedLimiterFactory = (options: {
  keyPrefix: string;
  points: number;
  duration: number;
  insuranceLimiter: RateLimiterAbstract;
}) => RateLimiterAbstract;

/**
 * The window of a limit: `burst` requests per `burst / perSecond` seconds (at least one), so the
 * sustained rate is `perSecond` and a client may spend the whole budget at once.
 */
export function windowOf(settings: RateLimitSettings): { points: number; duration: number } {
  return { points: settings.burst, duration: Math.max(1, Math.ceil(settings.burst / settings.perSecond)) };
}

/**
 * Per-address counts by rate-limiter-flexible (docs/operations.md, rate limits): in memory per
 * process by default, or in a store shared by every instance (`shared`), which falls back to
 * counting in memory while the store cannot be reached rather than failing the request.
 */
export function createRateLimiter(
  settings: RateLimitSettings,
  { name, shared }: { name: string; shared?: SharedLimiterFactory },
) {
  const window = windowOf(settings);
  const memory = new RateLimiterMemory({ keyPrefix: name, ...window });
  const limiter = shared ? shared({ keyPrefix: name, ...window, insuranceLimiter: memory }) : memory;
  return {
    /** Seconds to wait, or 0 when the request may proceed (and is counted). */
    async take(key: string): Promise<number> {
      if (!settings.enabled) return 0;
      try {
        await limiter.consume(key);
        return 0;
      } catch (refused) {
        if (refused instanceof RateLimiterRes) return Math.max(1, Math.ceil(refused.msBeforeNext / 1000));
        throw refused;
      }
    },
    /** Gives back a point `take` counted, for a request that turned out not to count. */
    async giveBack(key: string): Promise<void> {
      if (!settings.enabled) return;
      await limiter.reward(key, 1);
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;

/** Edge-envelope form: 429 RATE_LIMITED with Retry-After. */
export function rateLimit(limiter: RateLimiter) {
  return async function rateLimitMiddleware(ctx: Context, next: Next) {
    const wait = await limiter.take(clientAddressKey(clientAddress(ctx)));
    if (wait > 0) throw new AppError('RATE_LIMITED', { headers: { 'retry-after': String(wait) } });
    return next();
  };
}
