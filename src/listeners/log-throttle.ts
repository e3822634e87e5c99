export interface Admitted {
  /** Lines left out since the last one written for the key (for all untracked keys, when `untracked`). */
  suppressed: number;
  /** The key is one beyond the `maxKeys` tracked: it shares one window with every other such key. */
  untracked: boolean;
}

export interface LogThrottle {
  /** Whether to write a line for `key` now; undefined leaves it out (and counts it). */
  admit(key: string): Admitted | undefined;
}

interface Window {
  until: number;
  suppressed: number;
}

/**
 * At most one line per key (a peer address) per `intervalMs`, so that a peer that provokes a line
 * on every connection cannot flood the log; the next line written says how many were left out.
 * At most `maxKeys` keys are remembered: when all of them are still within their interval, any
 * other key shares one more window, so a flood from many addresses writes at most `maxKeys + 1`
 * lines per interval and holds bounded memory (an expired key forgotten to make room takes its
 * count of left-out lines with it).
 */
export function createLogThrottle({
  intervalMs,
  maxKeys = 1000,
  now = Date.now,
}: {
  intervalMs: number;
  maxKeys?: number;
  now?: () => number;
}): LogThrottle {
  // Insertion order is the order windows opened (a reopened key moves to the end), so the
  // expired ones are at the front.
  const windows = new Map<string, Window>();
  const untracked: Window = { until: -Infinity, suppressed: 0 };

  /** Counts a line left out, or reopens the window and says how many were. */
  const pass = (window: Window, t: number): number | undefined => {
    if (t < window.until) {
      window.suppressed++;
      return undefined;
    }
    const suppressed = window.suppressed;
    window.until = t + intervalMs;
    window.suppressed = 0;
    return suppressed;
  };

  return {
    admit(key) {
      const t = now();
      const known = windows.get(key);
      if (!known && windows.size >= maxKeys) {
        for (const [k, w] of windows) {
          if (t < w.until) break;
          windows.delete(k);
        }
        if (windows.size >= maxKeys) {
          const suppressed = pass(untracked, t);
          return suppressed === undefined ? undefined : { suppressed, untracked: true };
        }
      }
      const window = known ?? { until: -Infinity, suppressed: 0 };
      const suppressed = pass(window, t);
      if (suppressed === undefined) return undefined;
      windows.delete(key);
      windows.set(key, window);
      return { suppressed, untracked: false };
    },
  };
}
