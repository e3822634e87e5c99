import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A short random id (about 95 bits) for database rows, readable in URLs and logs. */
export function newId(length = 16): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (const b of bytes) {
    if (b >= 248) continue; // 248 = 62 * 4: keep the distribution uniform
    out += ALPHABET[b % 62];
    if (out.length === length) return out;
  }
  return out + newId(length - out.length);
}

/** An unguessable bearer value (256 bits). */
export const newToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
