import { formatDuration } from './duration.js';

export interface TokenDurations {
  accessTokenDuration: number;
  idTokenDuration: number;
  refreshTokenDuration: number;
}

const MINUTE = 60;

/**
 * Token durations under 1m are raised to 1m (shorter tokens expire in transit), and a refresh
 * duration that is not at least 1m longer than the access duration is raised to access + 1m.
 * Returns the adjusted values and one warning per adjustment.
 */
export function applyTokenDurationRules(input: TokenDurations): {
  durations: TokenDurations;
  warnings: string[];
} {
  const warnings: string[] = [];
  const raise = (key: keyof TokenDurations, value: number, min: number, why: string) => {
    if (value >= min) return value;
    warnings.push(`edge.oidc.${key} ${formatDuration(value)} raised to ${formatDuration(min)}: ${why}`);
    return min;
  };
  const accessTokenDuration = raise(
    'accessTokenDuration',
    input.accessTokenDuration,
    MINUTE,
    'minimum is 1m',
  );
  const idTokenDuration = raise('idTokenDuration', input.idTokenDuration, MINUTE, 'minimum is 1m');
  const refreshTokenDuration = raise(
    'refreshTokenDuration',
    input.refreshTokenDuration,
    accessTokenDuration + MINUTE,
    'must be at least 1m longer than accessTokenDuration',
  );
  return { durations: { accessTokenDuration, idTokenDuration, refreshTokenDuration }, warnings };
}
