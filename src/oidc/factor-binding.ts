import { AppError } from '../errors/app-error.js';
import { formatChallenge } from '../errors/www-authenticate.js';
import type { AuthQuery } from './login-state.js';
import type { OwedFactors } from './second-factors.js';

/** A factor a login can bind to the account mid-flow, by the auth query that asks for it. */
export interface BindableFactor {
  /** The auth query that asks for this factor. */
  matches: (q: AuthQuery) => boolean;
  /** For messages: what the login owes when it owes this factor. */
  owedName: string;
}

/** TOTP: the MFA query of the specification (`isTotpEnrolled`). */
export const TOTP_BINDING: BindableFactor = {
  matches: (q) => q.typeId === 'MFA' && 'isTotpEnrolled' in q,
  owedName: 'a TOTP code',
};

/**
 * A passkey a policy requires, not registered yet (`isPasskeyRegistered: false`; an extension beyond
 * the specification). The query for a registered one (`true`) asks for an assertion, never for a
 * new passkey: matching it too would let a password alone add a passkey of the caller's choosing.
 */
export const PASSKEY_BINDING: BindableFactor = {
  matches: (q) => q.typeId === 'MFA' && q.isPasskeyRegistered === false,
  owedName: 'a passkey',
};

/**
 * The one rule of binding: a login may bind `factor` only when it is all the login still owes.
 * The flow asks for an enrollment last and the routes show the enrollment page only then.
 */
export function owesOnly(owed: Pick<OwedFactors, 'authQueries'>, factor: BindableFactor): boolean {
  return owed.authQueries.length > 0 && owed.authQueries.every(factor.matches);
}

const describeQuery = (q: AuthQuery) =>
  q.typeId === 'EXT-JWT'
    ? `EXT-JWT (signer ${String(q.id)})`
    : 'isPasskeyRegistered' in q
      ? 'MFA (a passkey)'
      : q.typeId;

/**
 * A login may bind a new factor (TOTP enrollment; any later kind of authenticator) only when that
 * factor is the one thing it still owes. Binding is what a second factor protects: were it allowed
 * earlier, a password alone would make an authenticator of the caller's choosing the account's,
 * and the factors owed besides would be asked for only afterwards, too late. `owed` must already
 * count the credentials of the request at hand. Otherwise 400 INVALID_AUTH_REQUEST, naming what
 * is owed and carrying its challenges (also in WWW-Authenticate, as the 200 answer does).
 */
export function assertReadyToBind(owed: OwedFactors, factor: BindableFactor): void {
  if (!owed.authQueries.some(factor.matches)) {
    throw new AppError('INVALID_AUTH_REQUEST', { message: `this login does not owe ${factor.owedName}` });
  }
  if (owesOnly(owed, factor)) return;
  const others = owed.authQueries.filter((q) => !factor.matches(q));
  const challenges = owed.challenges.map((c) => `WWW-Authenticate: ${formatChallenge(c)}`);
  throw new AppError('INVALID_AUTH_REQUEST', {
    message:
      `satisfy the other owed factors before binding a new one: ${others.map(describeQuery).join(', ')}` +
      (challenges.length > 0 ? ` (${challenges.join('; ')})` : ''),
    challenges: owed.challenges,
  });
}
