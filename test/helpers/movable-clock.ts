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

let started = 0;

/** Takes the clock over (useMovableClock) and remembers now as second 0 for `clockAt`. */
export function startClock(): void {
  useMovableClock();
  started = Date.now();
}

/** Moves the clock to `seconds` after startClock(). */
export const clockAt = (seconds: number): void => jest.setSystemTime(started + seconds * 1000);

/** The wall-clock time, in ms, `seconds` after startClock(). */
export const clockTime = (seconds: number): number => started + seconds * 1000;

/** The token lifetimes the clock-moving OIDC suites run with: 5m access, 1h refresh, 2h chain. */
export const SHORT_OIDC_LIFETIMES = {
  SVC_OIDC_ACCESS_TOKEN_DURATION: '5m',
  SVC_OIDC_REFRESH_TOKEN_DURATION: '1h',
  SVC_EDGE_OIDC_MAX_SESSION_DURATION: '2h',
};
