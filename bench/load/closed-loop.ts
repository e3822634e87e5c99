/**
 * A closed-loop load: each worker starts its next operation when the previous one ends, so the
 * offered load adapts to the target and latency is not inflated by a queue in the generator.
 * Every loop stops at a deadline and at an operation count, whichever comes first.
 */

/** One worker's operation; it keeps its own state (a refresh-token chain, a token). */
export type Operation = () => Promise<void>;

export interface LoopLimits {
  durationMs: number;
  maxOps: number;
}

export interface LoopResult {
  ops: number;
  errors: number;
  firstError?: string;
  elapsedMs: number;
  /** Latency of every successful operation, in milliseconds. */
  latenciesMs: Float64Array;
}

export async function runClosedLoop(workers: Operation[], limits: LoopLimits): Promise<LoopResult> {
  const latencies = new Float64Array(limits.maxOps);
  let started = 0;
  let ops = 0;
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const deadline = start + limits.durationMs;

  async function worker(op: Operation): Promise<void> {
    while (started < limits.maxOps && performance.now() < deadline) {
      started++;
      const t0 = performance.now();
      try {
        await op();
        latencies[ops++] = performance.now() - t0;
      } catch (err) {
        errors++;
        firstError ??= (err as Error).message;
        // A failed step may have spent a one-time credential (a rotated refresh token): this
        // worker's state is no longer usable, so it stops rather than measuring failures.
        return;
      }
    }
  }

  await Promise.all(workers.map(worker));
  return {
    ops,
    errors,
    firstError,
    elapsedMs: performance.now() - start,
    latenciesMs: latencies.slice(0, ops),
  };
}
