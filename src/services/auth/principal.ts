import type { Socket } from 'node:net';

/** Who is calling, rebuilt per request from a legacy session or from a bearer token's claims. */
export interface Principal {
  identityId: string;
  identityName: string;
  isAdmin: boolean;
  /** The API session (`z_asid` for bearer tokens). */
  sessionId: string;
  kind: 'legacy' | 'oidc';
  expiresAt: Date;
  /**
   * When the person last proved a primary credential: the legacy session's creation, or an
   * access token's `auth_time` (the login's). Changes that need a recent sign-in look at it.
   */
  authTime: Date;
  amr: string[];
  configTypes: string[];
  isCertExtendable: boolean;
  /** A legacy session whose TOTP step is still owed: only the MFA endpoints answer. */
  mfaPending: boolean;
  /** The login owed a second factor (policy, or a verified TOTP); `isMfaRequired` of the APIs. */
  mfaRequired: boolean;
  /** A second factor was verified for this session; `isMfaComplete` of the APIs. */
  mfaComplete: boolean;
  /**
   * The identity's policy names a secondary external JWT signer: a valid JWT of it must come
   * with every API request; null when none is required.
   */
  requireExtJwtSigner: string | null;
  /** The identity's `externalId`: the secondary JWT must name it (signers with `useExternalId`). */
  externalId?: string | null;
  /** The OAuth scopes of a bearer token (`scope` claim); none for a legacy session. */
  scopes: string[];
}

/** Verifies `Authorization: Bearer` access tokens (the OIDC layer provides it). */
export interface BearerVerifier {
  /**
   * Resolves a principal, or throws AppError UNAUTHORIZED with the right challenge. `connection`
   * is the request's TLS socket: a certificate-bound token is accepted only over a connection
   * that presented its certificate (RFC 8705 §3).
   */
  verify(tokens: string[], connection: Socket | undefined): Promise<Principal>;
}
