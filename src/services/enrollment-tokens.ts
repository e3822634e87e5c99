import type { Knex } from 'knex';
import type { SecretBox } from '../crypto/secret-box.js';
import { enrollmentsRepository, type Enrollment } from '../repositories/enrollments-repository.js';

const LOOKUP_PURPOSE = 'enrollment-token-lookup';

/** An enrollment with its token opened, for the views and the enrollment JWT. */
export type OpenEnrollment = Omit<Enrollment, 'tokenSealed'> & { token: string };

/**
 * Enrollment tokens at rest (docs/adr/0004-hashed-token-ids.md): sealed with the master key, so an
 * admin can be shown the token again, and found by an HMAC under a key derived from the master
 * key, so a database dump yields neither the token nor anything to guess it against. The lookup
 * is an equality on the HMAC: the stored value is not chosen by the caller, so no timing leak.
 */
export function createEnrollmentTokens(box: SecretBox) {
  const lookupHash = (token: string) => box.keyedHash(LOOKUP_PURPOSE, token);
  const protect = (token: string) => ({ tokenHash: lookupHash(token), tokenSealed: box.seal(token) });

  return {
    lookupHash,
    protect,

    open(e: Enrollment): OpenEnrollment {
      const { tokenSealed, ...rest } = e;
      return { ...rest, token: box.open(tokenSealed) };
    },

    /**
     * Tokens written before migration 007 are still plain: a migration cannot reach the master key,
     * so they are sealed here, at start, before anything is served. Idempotent: a row is
     * converted only while it still holds its plain token, whichever process gets there first.
     */
    async protectPlainTokens(knex: Knex): Promise<number> {
      let converted = 0;
      for (const { id, token } of await enrollmentsRepository.listPlainTokens(knex)) {
        if (await enrollmentsRepository.replacePlainToken(knex, id, token, protect(token))) converted++;
      }
      return converted;
    },
  };
}

export type EnrollmentTokens = ReturnType<typeof createEnrollmentTokens>;
