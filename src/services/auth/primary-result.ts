import { AppError } from '../../errors/app-error.js';
import { reasonCode } from '../audit-trail.js';
import type { Identity } from '../../repositories/identities-repository.js';
import type { AuthPolicy } from '../../repositories/auth-policies-repository.js';

/** What a successful primary authentication tells the session and OIDC layers. */
export interface PrimaryAuthResult {
  identity: Identity;
  policy: AuthPolicy;
  /** RFC 8176-style method references: `pwd`, `cert`, `ext-jwt`. */
  amr: string[];
  /** True when the session rests on a certificate from our own PKI (z_ice). */
  isCertExtendable: boolean;
  /** The external JWT signer whose token authenticated (ext-jwt only). */
  signerId?: string;
  /** `x5t#S256` of the leaf certificate that authenticated (cert only). */
  certX5tS256?: string;
}

/** Why a primary login was refused: logged and audited, never shown to the client. */
export interface LoginRefusal {
  /** A stable code, e.g. `wrong-password`, `certificate-not-enrolled`. */
  reason: string;
  identityId?: string;
  /** This refusal locked the identity (its policy's `maxAttempts` reached). */
  lockout?: boolean;
  /** Its `auth.login` event was stored already, with the write that refused it (the lock). */
  audited?: boolean;
}

/** The one 401 of every refused primary login, whatever the reason. */
export function loginRefused(refusal: LoginRefusal): AppError {
  return new AppError('INVALID_AUTH', { detail: refusal });
}

/** The refusal an INVALID_AUTH error carries; a plain-text detail becomes its kebab-case code. */
export function refusalOf(err: AppError): LoginRefusal {
  const { detail } = err;
  if (typeof detail === 'object' && detail !== null && 'reason' in detail) return detail as LoginRefusal;
  return { reason: reasonCode(detail, err.code) };
}
