import { availableParallelism } from 'node:os';
import { hash, verify } from '@node-rs/argon2';
import { createConcurrencyLimit } from './concurrency-limit.js';

// OWASP Password Storage Cheat Sheet minimum for Argon2id (the library's default algorithm).
const PARAMS = { memoryCost: 19456, timeCost: 2, parallelism: 1 };

/**
 * Each hash or verification holds its 19 MiB for as long as it runs, on one of libuv's four pool
 * threads. More running at once than there are cores finishes none sooner, but adds 19 MiB each to
 * the process's peak memory and keeps the pool from the token signatures queued behind them
 * (docs/operations.md, "Memory").
 */
const argon2Slot = createConcurrencyLimit(availableParallelism());

export function hashPassword(password: string): Promise<string> {
  return argon2Slot(() => hash(password, PARAMS));
}

let dummyHash: Promise<string> | undefined;

/** Told the time of each verification in seconds (a metrics histogram). */
export type VerifyObserver = (seconds: number) => void;

/** One verification, timed from its start (its wait for a slot left out). */
function timedVerify(
  stored: string,
  password: string,
  observe: VerifyObserver | undefined,
): Promise<boolean> {
  return argon2Slot(async () => {
    const t0 = process.hrtime.bigint();
    try {
      return await verify(stored, password);
    } finally {
      observe?.(Number(process.hrtime.bigint() - t0) / 1e9);
    }
  });
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
    await timedVerify(dummy, password, observe).catch(() => false);
    return false;
  }
  return timedVerify(stored, password, observe).catch(() => false);
}
