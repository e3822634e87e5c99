import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

export interface SecretBox {
  seal(plaintext: string): string;
  /** Throws when the value was sealed with another key or altered. */
  open(sealed: string): string;
  /**
   * HMAC-SHA256 (base64url) of `value` under a key derived from the master key for `purpose`
   * (HKDF-SHA256, RFC 5869): a deterministic lookup key for a secret that is stored sealed.
   */
  keyedHash(purpose: string, value: string): string;
}

const VERSION = 'v1';

/** AES-256-GCM with the master key: how every secret is kept at rest. */
export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('the master key must be 32 bytes');
  const derived = new Map<string, Buffer>();
  const keyFor = (purpose: string) => {
    let k = derived.get(purpose);
    if (!k) {
      k = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `svc keyed hash: ${purpose}`, 32));
      derived.set(purpose, k);
    }
    return k;
  };
  return {
    keyedHash(purpose, value) {
      return createHmac('sha256', keyFor(purpose)).update(value, 'utf8').digest('base64url');
    },
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [VERSION, iv, cipher.getAuthTag(), body]
        .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
        .join('.');
    },
    open(sealed) {
      const [version, iv, tag, body] = sealed.split('.');
      if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('not a sealed secret');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    },
  };
}
