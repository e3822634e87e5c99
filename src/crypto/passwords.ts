import { hash, verify } from '@node-rs/argon2';

// OWASP Password Storage Cheat Sheet minimum for Argon2id (the library's default algorithm).
const PARAMS = { memoryCost: 19456, timeCost: 2, parallelism: 1 };

export function hashPassword(password: string): Promise<string> {
  return hash(password, PARAMS);
}

let dummyHash: Promise<string> | undefined;

/**
 * Verifies in constant time. With no stored hash (unknown user, no password authenticator) a
 * dummy hash is verified so the answer costs the same time (ASVS 6.3.8).
 */
export async function verifyPassword(stored: string | undefined | null, password: string): Promise<boolean> {
  if (!stored) {
    dummyHash ??= hashPassword('svc-dummy-password-for-timing');
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}
