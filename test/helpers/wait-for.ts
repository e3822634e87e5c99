export interface WaitForOptions {
  /** Give up after this many ms (generous: the suite runs on busy 2-core machines). */
  timeout?: number;
  /** Pause between attempts, in ms. */
  interval?: number;
  /** Named in the error when the deadline passes. */
  what?: string;
}

/**
 * Polls `probe` until it returns something other than undefined/false (or stops throwing), and
 * returns that value; waits for the event itself instead of a fixed sleep that is too short on a
 * loaded machine and needlessly long on an idle one.
 */
export async function waitFor<T>(
  probe: () => T | Promise<T>,
  { timeout = 15_000, interval = 50, what = 'condition' }: WaitForOptions = {},
): Promise<Exclude<T, undefined | false>> {
  const deadline = Date.now() + timeout;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value as Exclude<T, undefined | false>;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${detail}`);
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}
