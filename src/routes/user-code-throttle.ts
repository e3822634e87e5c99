import type { IncomingMessage } from 'node:http';
import type { Context, Middleware, Next } from 'koa';
import type { RateLimiter } from '../middleware/rate-limit.js';
import { clientAddress } from '../middleware/request-context.js';
import type { UserCodeGuesses } from '../oidc/device-flow.js';
import type { AuditTrail } from '../services/audit-trail.js';
import { clientAddressKey } from '../services/auth/client-address-key.js';
import { renderTooManyCodesPage } from './oidc-device-pages.js';

/** Wrong user codes an address may enter a minute before the code form answers 429 (RFC 8628 §5.1). */
export const WRONG_USER_CODES_PER_MINUTE = 10;

/** The limiter settings of the throttle, given whether limits are on at all. */
export const userCodeLimit = (enabled: boolean) => ({
  enabled,
  perSecond: WRONG_USER_CODES_PER_MINUTE / 60,
  burst: WRONG_USER_CODES_PER_MINUTE,
});

export interface UserCodeThrottle {
  /** In front of `/oidc/device`: spends one of the address's points per post, or answers 429. */
  gate: Middleware;
  /** Told by the provider's code form which posts carried a wrong code. */
  guesses: UserCodeGuesses;
}

/**
 * Wrong user codes per client address. Every post to the code form takes a point before the
 * provider looks at it, so parallel posts cannot all be checked before the first wrong one is
 * counted; a post whose code was not wrong (right, or none) gets its point back afterwards. With
 * the limiter's shared store the count is the same on every instance.
 */
export function createUserCodeThrottle(limiter: RateLimiter, audit: AuditTrail): UserCodeThrottle {
  const wrongCodes = new WeakSet<IncomingMessage>();
  return {
    guesses: {
      wrong(req) {
        wrongCodes.add(req);
      },
    },
    gate: async function userCodeGate(ctx: Context, next: Next) {
      if (ctx.method !== 'POST') return next();
      const key = clientAddressKey(clientAddress(ctx));
      const wait = await limiter.take(key);
      if (wait > 0) {
        // Counted per address network and minute, like the wrong codes that led here.
        await audit.storeAttempt({ event: 'oidc.device.user-code-throttled', outcome: 'lockout' });
        return renderTooManyCodesPage(ctx, wait);
      }
      try {
        await next();
      } finally {
        if (!wrongCodes.has(ctx.req)) await limiter.giveBack(key);
      }
    },
  };
}
