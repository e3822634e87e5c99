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
}
