import type { Knex } from 'knex';
import { verifyPassword, type VerifyObserver } from '../../crypto/passwords.js';
import { authenticatorsRepository } from '../../repositories/authenticators-repository.js';
import { identitiesRepository } from '../../repositories/identities-repository.js';
import { loginFailuresRepository } from '../../repositories/login-failures-repository.js';
import { isDisabled } from './identity-status.js';
import type { LoginLockout } from './login-lockout.js';
import { loginRefused, type PrimaryAuthResult } from './primary-result.js';

export interface PasswordMethodDeps {
  knex: Knex;
  lockout: LoginLockout;
  now?: () => Date;
  /** Told the time of each Argon2id verification (metrics). */
  onVerify?: VerifyObserver;
}

/** One password login as it arrived. */
export interface PasswordAttempt {
  username: string;
  password: string;
  /**
   * Koa's `ctx.ip`: the TCP peer, or a trusted PROXY header's source; never an HTTP header. The
   * hourly ceiling counts under its key (`clientAddressKey`).
   */
  clientAddress: string;
}

// No identity has this id: generated ids are 16 alphanumerics.
const SHADOW_IDENTITY_ID = '-';

/**
 * UPDB primary authentication. Every refusal — unknown user, wrong password, locked or disabled
 * identity, method not allowed by the policy — is the same 401 after the same Argon2id work.
 */
export function createPasswordMethod({
  knex,
  lockout,
  now = () => new Date(),
  onVerify,
}: PasswordMethodDeps) {
  const target = (identityId: string) => identitiesRepository.findWithPolicy(knex, identityId);

  /**
   * The database round trips of a known identity's failed attempt, touching nothing: an unknown username
   * must cost the same time as a wrong password (ASVS 5.0 V6.3.8: no username enumeration by timing).
   */
  async function shadowAttempt(password: string): Promise<void> {
    await target(SHADOW_IDENTITY_ID);
    await loginFailuresRepository.shadowWrite(knex, now());
    await verifyPassword(undefined, password, onVerify);
    await identitiesRepository.findById(knex, SHADOW_IDENTITY_ID);
  }

  return async function authenticatePassword({
    username,
    password,
    clientAddress,
  }: PasswordAttempt): Promise<PrimaryAuthResult> {
    const authenticator = await authenticatorsRepository.findByUsername(knex, username);
    const found = authenticator && (await target(authenticator.identityId));
    if (!authenticator || !found || !found.policy.primary.updb.allowed) {
      await shadowAttempt(password);
      throw loginRefused(
        authenticator
          ? { reason: 'policy-does-not-allow-updb', identityId: authenticator.identityId }
          : { reason: 'unknown-username' },
      );
    }
    const { identity, policy } = found;
    // Counted before the check: parallel guesses cannot outrun the limits.
    const attempt = await lockout.begin(identity.id, policy, clientAddress);
    const passwordOk = await verifyPassword(authenticator.passwordHash, password, onVerify);
    // Re-read: a lock set by a parallel attempt while this one was hashing must hold.
    const current = await identitiesRepository.findById(knex, identity.id);
    const locked = !current || isDisabled(current, now());
    if (passwordOk && !locked && !attempt.refused) {
      await lockout.succeed(attempt);
      return { identity: current, policy, amr: ['pwd'], isCertExtendable: false };
    }
    const reason = locked
      ? 'identity-disabled-or-locked'
      : attempt.refused
        ? 'attempt-limit'
        : 'wrong-password';
    const lockedNow = await lockout.fail(identity, policy, attempt, locked, reason);
    // A lockout's event was stored by the transaction that locked the identity.
    throw loginRefused({
      reason,
      identityId: identity.id,
      ...(lockedNow && { lockout: true, audited: true }),
    });
  };
}

export type PasswordMethod = ReturnType<typeof createPasswordMethod>;
