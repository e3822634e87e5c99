import { hash, verify } from '@node-rs/argon2';

// OWASP Password Storage Cheat Sheet minimum for Argon2id (the library's default algorithm).
const PARAMS = { memoryCost: 19456, timeCost: 2, parallelism: 1 };

export function hashPassword(password: string): Promise<string> {
  return hash(password, PARAMS);
}

let dummyHash: Promise<string> | undefined;

/** Told the time of each verification in seconds (a metrics histogram). */
export type VerifyObserver = (seconds: number) => void;

async function timed<T>(work: Promise<T>, observe: VerifyObserver | undefined): Promise<T> {
  if (!observe) return work;
  const t0 = process.hrtime.bigint();
  try {
    return await work;
  } finally {
    observe(Number(process.hrtime.bigint() - t0) / 1e9);
  }
}

/**
 * Verifies in constant time. With no stored hash (unknown user, no password authenticator) a
 * dummy hash is verified so the answer costs the same time (ASVS 6.3.8).
 */
export async function verifyPassword(
  stored: string | undefined | null,
  password: string,
  observe?: VerifyObserver,
): Promise<boolean> {
  if (!stored) {
    dummyHash ??= hashPassword('svc-dummy-password-for-timing');
    const dummy = await dummyHash;
    await timed(verify(dummy, password), observe).catch(() => false);
    return false;
  }
  return timed(verify(stored, password), observe).catch(() => false);
}
