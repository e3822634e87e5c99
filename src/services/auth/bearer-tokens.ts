/**
 * The bearer tokens of an `Authorization` header: `Bearer a, Bearer b` and repeated headers
 * (joined by Node with ", "), in order. A request may carry an access token and a secondary
 * external JWT side by side.
 */
export function bearerTokens(header: string | undefined): string[] {
  if (!header) return [];
  return header
    .split(/,\s*(?=bearer\s)/i)
    .map((part) => /^\s*bearer\s+(\S+)\s*$/i.exec(part)?.[1])
    .filter((t): t is string => t !== undefined);
}
