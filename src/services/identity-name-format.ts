/** OpenZiti's default for a CA's `identityNameFormat`, literally (no spaces around the dash). */
export const DEFAULT_IDENTITY_NAME_FORMAT = '[caName]-[commonName]';

export interface IdentityNameValues {
  caName: string;
  caId: string;
  commonName: string;
  requestedName: string;
  identityId: string;
}

const PLACEHOLDER = /\[(caName|caId|commonName|requestedName|identityId)\]/g;

/**
 * The name auto CA enrollment gives a new identity. One pass over the format, so a value that
 * itself looks like a placeholder (a certificate CN of `[caId]`) stays as it is; unknown
 * bracketed words are kept literally, as OpenZiti keeps them.
 */
export function formatIdentityName(format: string, values: IdentityNameValues): string {
  return format.replace(PLACEHOLDER, (_, key: keyof IdentityNameValues) => values[key]);
}

// Counter suffixes tried after the formatted name itself: `name000001` … (OpenZiti's width).
const SUFFIX_WIDTH = 6;

/**
 * The first free name: `base` itself, else `base` with the lowest zero-padded six-digit counter
 * that no identity uses (OpenZiti appends the counter the same way on a collision). `taken` holds
 * the names already in use that start with `base`.
 */
export function firstFreeName(base: string, taken: ReadonlySet<string>): string | undefined {
  if (!taken.has(base)) return base;
  const limit = 10 ** SUFFIX_WIDTH;
  for (let n = 1; n < limit; n += 1) {
    const candidate = base + String(n).padStart(SUFFIX_WIDTH, '0');
    if (!taken.has(candidate)) return candidate;
  }
  return undefined;
}

export const suffixWidth = SUFFIX_WIDTH;
