import { describe, expect, test } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRateLimiter, windowOf } from './rate-limit.js';

describe('per-address limits', () => {
  test('a burst passes, the next request waits for the window, other addresses are not affected', async () => {
    const limiter = createRateLimiter({ enabled: true, perSecond: 1, burst: 3 }, { name: 'test' });
    expect(await Promise.all([1, 2, 3].map(() => limiter.take('a')))).toEqual([0, 0, 0]);
    const wait = await limiter.take('a');
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(3);
    expect(await limiter.take('b')).toBe(0);
  });

  test('the budget comes back once the window has passed', async () => {
    const limiter = createRateLimiter({ enabled: true, perSecond: 2, burst: 2 }, { name: 'test' });
    expect([await limiter.take('a'), await limiter.take('a')]).toEqual([0, 0]);
    expect(await limiter.take('a')).toBe(1);
    await sleep(1100);
    expect(await limiter.take('a')).toBe(0);
  });

  test('the window holds burst requests and averages perSecond', () => {
    expect(windowOf({ enabled: true, perSecond: 20, burst: 200 })).toEqual({ points: 200, duration: 10 });
    expect(windowOf({ enabled: true, perSecond: 10, burst: 5 })).toEqual({ points: 5, duration: 1 });
    expect(windowOf({ enabled: true, perSecond: 3, burst: 10 })).toEqual({ points: 10, duration: 4 });
  });

  test('nothing is limited when disabled', async () => {
    const limiter = createRateLimiter({ enabled: false, perSecond: 1, burst: 1 }, { name: 'test' });
    expect(await Promise.all([1, 2, 3, 4].map(() => limiter.take('a')))).toEqual([0, 0, 0, 0]);
  });
});
