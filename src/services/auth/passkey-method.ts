import type { Knex } from 'knex';
import { newToken } from '../../crypto/random.js';
import { AppError, isAppError } from '../../errors/app-error.js';
import { identitiesRepository } from '../../repositories/identities-repository.js';
import { reasonCode } from '../audit-trail.js';
import { withSecondFactor } from '../session-service.js';
import type { PasskeyService } from '../passkeys/passkey-service.js';
import type { WebauthnSite } from '../passkeys/webauthn-settings.js';
import { clientAddressKey } from './client-address-key.js';
import { isDisabled } from './identity-status.js';
import { loginRefused, type PrimaryAuthResult } from './primary-result.js';

/**
 * Failed passwordless assertions per client address: `take` counts one before the check (0 when
 * the address may go on, else the seconds to wait), `giveBack` returns it after a success.
 */
export interface AddressFailureBudget {
  take(addressKey: string): Promise<number>;
  giveBack(addressKey: string): Promise<void>;
}

/** Failed passwordless assertions an address may send in `PASSKEY_FAILURE_WINDOW_SECONDS`. */
export const PASSKEY_FAILURES_PER_WINDOW = 20;
export const PASSKEY_FAILURE_WINDOW_SECONDS = 15 * 60;

export interface PasskeyMethodDeps {
  knex: Knex;
  passkeys: Pick<PasskeyService, 'verifyAssertion' | 'assertionOptions'>;
  failures: AddressFailureBudget;
  now?: () => Date;
}

/** One passwordless login as it arrived. */
export interface PasskeyAttempt {
  /** The authenticator's answer (AuthenticationResponseJSON), unparsed. */
  response: unknown;
  /** What the challenge was bound to: the auth request, or the legacy ceremony id. */
  ceremony: { boundTo: string };
  site: WebauthnSite;
  /** Koa's `ctx.ip` (see password-method.ts): the failures are counted under its key. */
  clientAddress: string;
}

/**
 * Passwordless primary login with a discoverable passkey (an extension beyond the specification).
 * The identity is the one the verified credential belongs to. Failures are counted per client
 * address and never against an identity: a credential id is no secret, and counting against the
 * identity it names would let anyone lock its owner out. With user verification (required by the
 * request options) the passkey is two factors: `amr` is `pop` and `mfa`.
 */
export function createPasskeyMethod({ knex, passkeys, failures, now = () => new Date() }: PasskeyMethodDeps) {
  async function authenticate(attempt: PasskeyAttempt): Promise<PrimaryAuthResult> {
    const addressKey = clientAddressKey(attempt.clientAddress);
    const wait = await failures.take(addressKey);
    if (wait > 0) {
      throw new AppError('RATE_LIMITED', {
        message: 'too many refused passkey sign-ins from this address; retry later',
        headers: { 'Retry-After': String(wait) },
        detail: { reason: 'passkey-address-failure-limit' },
      });
    }
    let verified;
    try {
      verified = await passkeys.verifyAssertion(
        { purpose: 'passwordless' },
        attempt.ceremony,
        attempt.site,
        attempt.response,
      );
    } catch (err) {
      if (isAppError(err) && err.status === 401) {
        throw loginRefused({ reason: reasonCode(err.detail, 'passkey-assertion-refused') });
      }
      throw err;
    }
    const identityId = verified.identityId;
    // Read after the verification: an identity disabled or deleted a moment ago cannot sign in.
    const found = await identitiesRepository.findWithPolicy(knex, identityId);
    if (!found || isDisabled(found.identity, now())) {
      throw loginRefused({ reason: 'identity-disabled-or-locked', identityId });
    }
    if (!found.policy.primary.passkey.allowed) {
      throw loginRefused({ reason: 'policy-does-not-allow-passkey', identityId });
    }
    if (!verified.userVerified) throw loginRefused({ reason: 'user-not-verified', identityId });
    await failures.giveBack(addressKey);
    // Possession of the key and the authenticator's user verification: two factors.
    return {
      identity: found.identity,
      policy: found.policy,
      amr: withSecondFactor([], 'pop'),
      isCertExtendable: false,
    };
  }

  return {
    authenticate,

    /**
     * A legacy passwordless ceremony: request options whose challenge is bound to a fresh random
     * ceremony id, which the login sends back with the assertion. Without an auth request or a
     * session there is nothing else to bind it to; the id keeps one client's challenge from
     * finishing another client's login.
     */
    async legacyCeremony(site: WebauthnSite) {
      const ceremonyId = newToken(24);
      const options = await passkeys.assertionOptions(
        { purpose: 'passwordless' },
        { boundTo: ceremonyId },
        site,
      );
      return { ceremonyId, options };
    },
  };
}

export type PasskeyMethod = ReturnType<typeof createPasskeyMethod>;
