/** An item of `authQueries`: a factor the auth request still owes, as the client sees it. */
export interface AuthQuery {
  typeId: string;
  [field: string]: unknown;
}

/** What one auth request has established so far; kept in `interaction.result.svc`. */
export interface LoginState {
  identityId: string;
  /** The primary method used: `password`, `cert`, `ext-jwt`. */
  method: string;
  amr: string[];
  configTypes: string[];
  isCertExtendable: boolean;
  /** Epoch seconds of the primary authentication (`auth_time`). */
  authTime: number;
  /**
   * `x5t#S256` of the client certificate of a `cert` primary step: the tokens are bound to it
   * when the policy says so (`primary.cert.bindTokens`), whatever connection later steps use.
   */
  presentedCertX5tS256?: string;
  /** Factors satisfied for this auth request, e.g. `primary`, `totp`, `secondary-ext-jwt`. */
  satisfied: string[];
  /**
   * The credentials verified for this auth request, each once: `password`, `cert`, `totp`,
   * `ext-jwt:<signer id>`. A JWT that satisfies both the primary and the secondary factor (same
   * signer) is one credential; JWTs of two signers are two. More than one adds `mfa` to `amr`.
   */
  credentials: string[];
  /**
   * The TOTP enrollment this auth request started mid-flow (a marker from the TOTP service): the
   * only enrollment its steps may show, verify or abandon, so a password alone never reaches an
   * enrollment the identity's owner has in progress.
   */
  totpEnrollment?: string;
}

/** A verified credential as `LoginState.credentials` names it. */
export const credentialName = (method: string, signerId: string | undefined): string =>
  signerId ? `ext-jwt:${signerId}` : method;

/** RFC 8176 `mfa`: more than one credential was verified, whatever their `amr` values. */
export function amrWithMfa(state: Pick<LoginState, 'amr' | 'credentials'>): string[] {
  const multiFactor = new Set(state.credentials ?? []).size > 1;
  return multiFactor && !state.amr.includes('mfa') ? [...state.amr, 'mfa'] : state.amr;
}
