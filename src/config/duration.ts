const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/**
 * Parses durations such as `90s`, `30m`, `24h`, `1h30m` or `7d` into whole seconds.
 * Returns undefined for anything else, so the caller can name the offending key.
 */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (!/^(\d+(\.\d+)?[smhd])+$/.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)([smhd])/g)) {
    total += Number(amount) * UNIT_SECONDS[unit!]!;
  }
  return Math.floor(total);
}

/** 5400 → "1h30m"; used in warnings so operators read the adjusted value in their own terms. */
export function formatDuration(seconds: number): string {
  const parts: string[] = [];
  let rest = seconds;
  for (const [unit, size] of [
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.join('') || '0s';
}
