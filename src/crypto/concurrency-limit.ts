/**
 * Runs at most `limit` tasks at once; the others wait their turn in order of arrival. For work
 * whose cost is memory held while it runs, where the number running at once, not the number
 * waiting, sets the process's peak.
 */
export function createConcurrencyLimit(limit: number) {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit: a positive integer');
  let running = 0;
  const waiting: Array<() => void> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else running--;
  };
  return async function run<T>(task: () => Promise<T>): Promise<T> {
    if (running < limit) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      release();
    }
  };
}
