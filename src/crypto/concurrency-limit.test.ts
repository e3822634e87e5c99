import { describe, expect, test } from '@jest/globals';
import { createConcurrencyLimit } from './concurrency-limit.js';

describe('createConcurrencyLimit', () => {
  test('runs at most the limit at once, the rest in order of arrival, and frees a slot on failure', async () => {
    const run = createConcurrencyLimit(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const task = (n: number) => async () => {
      started.push(n);
      most = Math.max(most, ++running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      if (n === 1) throw new Error('task 1 failed');
      return n;
    };
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map((n) => run(task(n))));
    expect(most).toBe(2);
    expect(started).toEqual([1, 2, 3, 4, 5]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : 'failed'))).toEqual([
      'failed',
      2,
      3,
      4,
      5,
    ]);
  });

  test('refuses a limit below one', () => {
    expect(() => createConcurrencyLimit(0)).toThrow(RangeError);
  });
});
