import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

// Random bytes for ids are drawn from the CSPRNG in blocks: one request id per request would
// otherwise cost a call into OpenSSL each. Every byte is used once.
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolAt = 0;

function randomByte(): number {
  if (poolAt >= pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolAt = 0;
  }
  return pool[poolAt++]!;
}

/** A short random id (about 95 bits) for database rows, readable in URLs and logs. */
export function newId(length = 16): string {
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b >= 248) continue; // 248 = 62 * 4: keep the distribution uniform
    out += ALPHABET[b % 62];
  }
  return out;
}

/** An unguessable bearer value (256 bits). */
export const newToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
