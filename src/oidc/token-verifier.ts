import {
  compactVerify,
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  jwtVerify,
  type JSONWebKeySet,
  type JWK,
  type JWTPayload,
} from 'jose';
import { AppError } from '../errors/app-error.js';
import { challenges } from '../errors/www-authenticate.js';
import type { Socket } from 'node:net';
import { presentedCertX5tS256 } from '../crypto/connection-certificate.js';
import type { BearerVerifier, Principal } from '../services/auth/principal.js';
import type { IdentityContext } from '../services/identity-context.js';
import type { RevocationState } from '../services/revocation-state.js';
import { GENERATION_CLAIM } from './account-policy.js';
import { ACCESS_TOKEN_AUDIENCE, CLIENT_ID } from './create-provider.js';

export interface AccessTokenClaims extends JWTPayload {
  sub: string;
  exp: number;
  z_asid: string;
  z_ia: boolean;
  z_ct: string[];
  z_t: string;
  z_ice: boolean;
  amr?: string[];
  scope?: string;
  client_id?: string;
  /** RFC 8705 §3.1: the certificate a bound token may be used with. */
  cnf?: { 'x5t#S256'?: unknown };
}

export interface TokenVerifierDeps {
  issuers: () => string[];
  /** In-memory revocations, kept current across instances (ADR 0006). */
  revocations: Pick<RevocationState, 'isSessionRevoked' | 'isIdentityTokenRevoked'>;
  /** What a bearer request needs of its identity (the cache holds more; the token settles the rest). */
  identities: { get(id: string): Promise<IdentityContext | undefined> };
  now?: () => Date;
  /** How many verified access tokens are kept (least recently used go first). */
  cacheSize?: number;
}

const CACHE_SIZE = 10_000;

const invalid = (detail: string) =>
  new AppError('UNAUTHORIZED', { challenges: [challenges.bearerInvalid()], detail });

/**
 * RFC 8705 §3: whether a request over `connection` may use a token with these claims: an unbound
 * one anywhere, a bound one only over a connection that presented its certificate. A `cnf` with no
 * certificate in it binds to something we cannot check, and counts nowhere.
 */
export function heldOver(claims: Pick<AccessTokenClaims, 'cnf'>, connection: Socket | undefined): boolean {
  if (claims.cnf === undefined) return true;
  const bound = claims.cnf?.['x5t#S256'];
  return typeof bound === 'string' && presentedCertX5tS256(connection) === bound;
}

/**
 * Our JWT access tokens on API calls and at userinfo, and ID tokens as `id_token_hint`
 * (ADR 0003). Nothing here reads the database per request: the key set, the
 * revocations and the identity facts are in memory, kept current across instances.
 */
export function createTokenVerifier(deps: TokenVerifierDeps) {
  const now = deps.now ?? (() => new Date());
  const cacheSize = deps.cacheSize ?? CACHE_SIZE;
  let keys: ReturnType<typeof createLocalJWKSet> | undefined;
  let kids = new Set<string>();
  // Verified tokens by their text: the signature check (the costly part) is done once per token. A
  // hit is used only while the token is unexpired, its issuer still ours and its signing key still
  // in the key set; revocations are checked on every request all the same (they are in memory).
  // Insertion order of the Map is the recency order.
  const verified = new Map<string, { claims: AccessTokenClaims; kid: string }>();

  const isOurs = (token: string) => {
    try {
      const iss = decodeJwt(token).iss;
      return typeof iss === 'string' && deps.issuers().includes(iss);
    } catch {
      return false;
    }
  };

  function cached(token: string): AccessTokenClaims | undefined {
    const hit = verified.get(token);
    if (!hit) return undefined;
    verified.delete(token);
    // jose's rule: expired once `exp` is at or below the current second (RFC 7519 §4.1.4).
    const usable =
      hit.claims.exp > Math.floor(now().getTime() / 1000) &&
      kids.has(hit.kid) &&
      deps.issuers().includes(String(hit.claims.iss));
    if (!usable) return undefined;
    verified.set(token, hit);
    return hit.claims;
  }

  function remember(token: string, claims: AccessTokenClaims): void {
    const kid = decodeProtectedHeader(token).kid;
    if (typeof kid !== 'string' || typeof claims.exp !== 'number' || cacheSize <= 0) return;
    verified.set(token, { claims, kid });
    if (verified.size > cacheSize) verified.delete(verified.keys().next().value!);
  }

  async function signatureAndClaims(token: string): Promise<AccessTokenClaims> {
    const hit = cached(token);
    if (hit) return hit;
    if (!keys) throw invalid('no key set loaded yet');
    try {
      const { payload } = await jwtVerify(token, keys, {
        algorithms: ['RS256'],
        typ: 'at+jwt',
        issuer: deps.issuers(),
        audience: ACCESS_TOKEN_AUDIENCE,
        currentDate: now(),
      });
      remember(token, payload as AccessTokenClaims);
      return payload as AccessTokenClaims;
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) {
        throw new AppError('UNAUTHORIZED', { challenges: [challenges.bearerExpired()], detail: 'expired' });
      }
      throw invalid(`verification failed: ${(err as Error).message}`);
    }
  }

  /**
   * Ended sessions and revoked identities (deleted, disabled, locked, privileges or policy
   * changed: each bumps the identity's token generation), all from memory.
   */
  async function revocationCheck(claims: AccessTokenClaims): Promise<IdentityContext> {
    if (deps.revocations.isSessionRevoked(claims.z_asid)) throw invalid('API session ended');
    const generation = claims[GENERATION_CLAIM];
    if (typeof generation !== 'number' || deps.revocations.isIdentityTokenRevoked(claims.sub, generation)) {
      throw invalid('identity revoked');
    }
    const identity = await deps.identities.get(claims.sub);
    if (!identity) throw invalid('identity deleted');
    return identity;
  }

  /**
   * Signature, claims, revocations and identity; not the `cnf` binding, which only a request of
   * the token's holder can show (`bearer.verify` adds it; introspection and revocation, which
   * look at someone's token, do not).
   */
  async function verifyAccessToken(
    token: string,
  ): Promise<{ claims: AccessTokenClaims; identity: IdentityContext }> {
    const claims = await signatureAndClaims(token);
    if (claims.z_t !== 'a' || typeof claims.z_asid !== 'string' || typeof claims.sub !== 'string') {
      throw invalid('not an access token');
    }
    return { claims, identity: await revocationCheck(claims) };
  }

  /**
   * An access token presented for revocation (RFC 7009): ours (signature, issuer, audience, not
   * expired) and of a session not ended yet; undefined for anything else, which the caller
   * answers as it answers an unknown token.
   */
  async function revocableAccessToken(token: string): Promise<AccessTokenClaims | undefined> {
    try {
      const claims = await signatureAndClaims(token);
      if (claims.z_t !== 'a' || typeof claims.z_asid !== 'string') return undefined;
      return deps.revocations.isSessionRevoked(claims.z_asid) ? undefined : claims;
    } catch {
      return undefined;
    }
  }

  /**
   * RFC 8705 §3: a bound token counts only over a connection that presented its certificate.
   * Checked on every request against that request's connection; the cache keeps only the claim.
   */
  function bindingCheck(claims: AccessTokenClaims, connection: Socket | undefined): void {
    if (!heldOver(claims, connection)) throw invalid('certificate-bound token without its certificate');
  }

  const bearer: BearerVerifier = {
    async verify(tokens: string[], connection: Socket | undefined): Promise<Principal> {
      // A token verified before is ours (its issuer is checked again on the hit): no decoding.
      const ours = tokens.find((t) => verified.has(t) || isOurs(t));
      if (!ours) throw invalid('no token of ours');
      const { claims, identity } = await verifyAccessToken(ours);
      bindingCheck(claims, connection);
      const amr = Array.isArray(claims.amr) ? claims.amr : [];
      // An OIDC login finishes only once every factor it owed is verified: required ⇔ complete.
      const mfa = amr.includes('mfa');
      return {
        identityId: identity.id,
        identityName: identity.name,
        isAdmin: claims.z_ia === true,
        sessionId: claims.z_asid,
        kind: 'oidc',
        expiresAt: new Date(claims.exp * 1000),
        // Every access token of ours carries the login's auth_time; one without it counts as old.
        authTime: new Date(typeof claims.auth_time === 'number' ? claims.auth_time * 1000 : 0),
        amr,
        configTypes: Array.isArray(claims.z_ct) ? claims.z_ct : [],
        isCertExtendable: claims.z_ice === true,
        mfaPending: false,
        mfaRequired: mfa,
        mfaComplete: mfa,
        requireExtJwtSigner: identity.requireExtJwtSigner,
        externalId: identity.externalId ?? null,
        scopes: typeof claims.scope === 'string' ? claims.scope.split(' ') : [],
      };
    },
  };

  /**
   * An `id_token_hint`: signature, issuer and audience, but an expired one is accepted
   * (logging out after the ID token expired must still work). Access tokens are not hints.
   */
  async function verifyIdTokenHint(
    token: string,
  ): Promise<{ sub: string; apiSessionId: string } | undefined> {
    if (!keys) return undefined;
    try {
      const { payload, protectedHeader } = await compactVerify(token, keys, { algorithms: ['RS256'] });
      if (protectedHeader.typ === 'at+jwt') return undefined;
      const claims = JSON.parse(new TextDecoder().decode(payload)) as JWTPayload & { z_asid?: unknown };
      const aud = [claims.aud].flat();
      if (!deps.issuers().includes(String(claims.iss)) || !aud.includes(CLIENT_ID)) return undefined;
      if (typeof claims.sub !== 'string' || typeof claims.z_asid !== 'string' || 'z_t' in claims)
        return undefined;
      return { sub: claims.sub, apiSessionId: claims.z_asid };
    } catch {
      return undefined;
    }
  }

  return {
    setKeys(publicJwks: JWK[]): void {
      keys = createLocalJWKSet({ keys: publicJwks } as JSONWebKeySet);
      kids = new Set(publicJwks.map((k) => k.kid).filter((kid): kid is string => typeof kid === 'string'));
    },
    verifyAccessToken,
    verifyIdTokenHint,
    revocableAccessToken,
    bearer,
  };
}

export type TokenVerifier = ReturnType<typeof createTokenVerifier>;
