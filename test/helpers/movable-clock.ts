import { jest } from '@jest/globals';

/** Every timer API stays real; only `Date` is replaced. */
const REAL = [
  'hrtime',
  'nextTick',
  'performance',
  'queueMicrotask',
  'setImmediate',
  'clearImmediate',
  'setInterval',
  'clearInterval',
  'setTimeout',
  'clearTimeout',
] as const;

/**
 * Lets a test move the wall clock with `jest.setSystemTime(ms)` instead of sleeping until an expiry.
 * Only `Date` is faked and it keeps ticking (`advanceTimers`), so I/O, the database driver and
 * every timer run as usual; the test server runs in this process, so oidc-provider's epochTime(),
 * the adapter's expiry filter and the session service all read the moved clock, as they would
 * after real waiting. Undo with `jest.useRealTimers()` (in afterEach).
 */
export function useMovableClock(): void {
  jest.useFakeTimers({ doNotFake: [...REAL], advanceTimers: true });
}
