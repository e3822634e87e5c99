import { describe, expect, test } from '@jest/globals';
import { createLogThrottle } from './log-throttle.js';

describe('createLogThrottle', () => {
  let t = 0;
  const now = () => t;

  test('one line per key per interval; the next one counts those left out', () => {
    t = 1_000;
    const throttle = createLogThrottle({ intervalMs: 60_000, now });
    expect(throttle.admit('192.0.2.1')).toEqual({ suppressed: 0, untracked: false });
    for (let i = 0; i < 5; i++) expect(throttle.admit('192.0.2.1')).toBeUndefined();
    // Another key has its own window.
    expect(throttle.admit('192.0.2.2')).toEqual({ suppressed: 0, untracked: false });
    t += 59_999;
    expect(throttle.admit('192.0.2.1')).toBeUndefined();
    t += 1;
    expect(throttle.admit('192.0.2.1')).toEqual({ suppressed: 6, untracked: false });
    expect(throttle.admit('192.0.2.1')).toBeUndefined();
    t += 60_000;
    expect(throttle.admit('192.0.2.1')).toEqual({ suppressed: 1, untracked: false });
  });

  test('beyond maxKeys open windows, every other key shares one; expired keys make room', () => {
    t = 0;
    const throttle = createLogThrottle({ intervalMs: 1_000, maxKeys: 2, now });
    expect(throttle.admit('a')).toEqual({ suppressed: 0, untracked: false });
    t = 500;
    expect(throttle.admit('b')).toEqual({ suppressed: 0, untracked: false });
    expect(throttle.admit('c')).toEqual({ suppressed: 0, untracked: true });
    expect(throttle.admit('d')).toBeUndefined();
    expect(throttle.admit('c')).toBeUndefined();
    // A tracked key keeps its own window while the others share one.
    expect(throttle.admit('a')).toBeUndefined();
    t = 1_000;
    // a's window has ended: it is forgotten to make room for e.
    expect(throttle.admit('e')).toEqual({ suppressed: 0, untracked: false });
    expect(throttle.admit('f')).toBeUndefined();
    t = 1_500;
    // b's window has ended too: f takes its place; the shared window has ended as well.
    expect(throttle.admit('f')).toEqual({ suppressed: 0, untracked: false });
    expect(throttle.admit('g')).toEqual({ suppressed: 3, untracked: true });
  });
});
