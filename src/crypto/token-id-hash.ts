import { createHash } from 'node:crypto';

/**
 * The stored key of a bearer secret: SHA-256, base64url. The secrets it is used for are random
 * (at least 128 bits), so an unsalted fast hash cannot be reversed, and a database dump yields
 * nothing that can be presented (docs/adr/0004-hashed-token-ids.md).
 */
export function hashTokenId(id: string): string {
  return createHash('sha256').update(id, 'utf8').digest('base64url');
}
