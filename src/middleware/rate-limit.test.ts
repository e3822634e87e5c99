import { describe, expect, test } from '@jest/globals';
import { createRateLimiter } from './rate-limit.js';

describe('per-address token buckets', () => {
  test('a burst passes, the next request waits, and tokens refill at the sustained rate', () => {
    let t = 0;
    const limiter = createRateLimiter({ enabled: true, perSecond: 2, burst: 3 }, () => t);
    expect([1, 2, 3].map(() => limiter.take('a'))).toEqual([0, 0, 0]);
    expect(limiter.take('a')).toBe(1);
    expect(limiter.take('b')).toBe(0);
    t = 500;
    expect(limiter.take('a')).toBe(0);
    expect(limiter.take('a')).toBe(1);
  });

  test('nothing is limited when disabled', () => {
    const limiter = createRateLimiter({ enabled: false, perSecond: 1, burst: 1 });
    expect([1, 2, 3, 4].map(() => limiter.take('a'))).toEqual([0, 0, 0, 0]);
  });
});
