import type { Knex } from 'knex';
import { AppError, isAppError } from '../../errors/app-error.js';
import { identitiesRepository } from '../../repositories/identities-repository.js';
import { NO_AUDIT, reasonCode, type AuditTrail } from '../audit-trail.js';
import type { PasskeyService } from '../passkeys/passkey-service.js';
import type { WebauthnSite } from '../passkeys/webauthn-settings.js';
import { createSecondFactorAttempts } from './second-factor-attempts.js';

export interface PasskeyFactorDeps {
  knex: Knex;
  passkeys: Pick<PasskeyService, 'verifyAssertion'>;
  audit?: AuditTrail;
  now?: () => Date;
}

/** The error a refused assertion gets: the OIDC login's 401, or the legacy MFA step's 400. */
export type InvalidAssertionError = 'INVALID_AUTH' | 'MFA_INVALID_TOKEN';

/**
 * A passkey as the second factor (an extension beyond the specification). Each assertion is
 * counted like a TOTP code, in the same per-identity window (second-factor-attempts.ts): a second factor
 * has one failure budget whatever form its guesses take, and over it the answer is 429 without
 * looking at the assertion.
 */
export function createPasskeyFactor({
  knex,
  passkeys,
  audit = NO_AUDIT,
  now = () => new Date(),
}: PasskeyFactorDeps) {
  const limited = createSecondFactorAttempts({ knex, now });

  return {
    /** The identity's policy requires a passkey: then no TOTP code pays its second factor. */
    async requiredFor(identityId: string): Promise<boolean> {
      const found = await identitiesRepository.findWithPolicy(knex, identityId);
      return found?.policy.secondary.requirePasskey ?? false;
    },

    /**
     * Verifies an assertion of one of `identityId`'s passkeys on the ceremony it was asked for;
     * records one `auth.second-factor` event (method `passkey`).
     */
    async verify(
      identityId: string,
      ceremony: { boundTo: string },
      site: WebauthnSite,
      response: unknown,
      invalid: InvalidAssertionError,
    ): Promise<void> {
      let refusal = 'assertion refused';
      try {
        const verified = await limited(identityId, async () => {
          try {
            return await passkeys.verifyAssertion(
              { purpose: 'second-factor', identityId },
              ceremony,
              site,
              response,
            );
          } catch (err) {
            // A refused assertion is a failed attempt; anything else (a database fault) is not.
            if (!(isAppError(err) && err.status === 401)) throw err;
            refusal = reasonCode(err.detail, err.message);
            return undefined;
          }
        });
        if (!verified)
          throw new AppError(invalid, { message: 'the passkey was not accepted', detail: refusal });
        // Stored with the write the login makes on this request (audit-trail.ts `hold`).
        await audit.hold({ event: 'auth.second-factor', method: 'passkey', outcome: 'success', identityId });
      } catch (err) {
        if (isAppError(err)) {
          await audit.storeAttempt({
            event: 'auth.second-factor',
            method: 'passkey',
            outcome: err.code === 'RATE_LIMITED' ? 'lockout' : 'failure',
            reason: reasonCode(err.detail, err.code),
            identityId,
          });
        }
        throw err;
      }
    },
  };
}

export type PasskeyFactor = ReturnType<typeof createPasskeyFactor>;
