import type { Knex } from 'knex';
import { isForeignKeyViolation } from '../../db/db-errors.js';
import { AppError } from '../../errors/app-error.js';
import { mfaTotpFailuresRepository } from '../../repositories/mfa-totp-failures-repository.js';

/** 5 failed codes per identity per 15 minutes: 10^6 codes cannot be guessed within a step. */
export const TOTP_MAX_FAILURES = 5;
export const TOTP_FAILURE_WINDOW_MS = 15 * 60_000;

export interface SecondFactorAttemptsDeps {
  knex: Knex;
  now: () => Date;
}

/**
 * Runs one second-factor check (a TOTP or recovery code, a passkey assertion) under the
 * identity's one failure limit, whatever form the guesses take. The attempt is counted BEFORE the
 * check (one atomic upsert), so twenty parallel guesses get five checks, not twenty; a successful
 * check gives its slot back. Over the limit the answer is 429 with Retry-After without looking at
 * the answer at all, even a correct one (a guesser must not learn he was right).
 */
export function createSecondFactorAttempts({ knex, now }: SecondFactorAttemptsDeps) {
  return async function limited<T>(
    identityId: string,
    check: () => Promise<T | undefined>,
  ): Promise<T | undefined> {
    const at = now();
    let window;
    try {
      window = await mfaTotpFailuresRepository.reserveAttempt(knex, identityId, at, TOTP_FAILURE_WINDOW_MS);
    } catch (err) {
      // The identity was deleted while it was logging in: nothing left to check a code against.
      if (isForeignKeyViolation(err)) return undefined;
      throw err;
    }
    if (window.attempts > TOTP_MAX_FAILURES) {
      const endsAt = window.windowStartedAt.getTime() + TOTP_FAILURE_WINDOW_MS;
      const retryAfter = Math.max(1, Math.ceil((endsAt - at.getTime()) / 1000));
      throw new AppError('RATE_LIMITED', {
        message: 'too many invalid codes; retry later',
        headers: { 'Retry-After': String(retryAfter) },
        detail: { identityId, reason: 'TOTP failure limit' },
      });
    }
    const result = await check();
    if (result !== undefined) await mfaTotpFailuresRepository.releaseAttempt(knex, identityId);
    return result;
  };
}

export type SecondFactorAttempts = ReturnType<typeof createSecondFactorAttempts>;
