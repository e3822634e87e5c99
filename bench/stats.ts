/** Order statistics for the report; nearest-rank percentiles, so p99 is an observed latency. */

export function median(values: number[]): number {
  return percentile(values, 50);
}

export function percentile(values: ArrayLike<number>, p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}
