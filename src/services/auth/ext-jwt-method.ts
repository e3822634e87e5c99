import type { Knex } from 'knex';
import {
  decodeJwt,
  decodeProtectedHeader,
  errors as joseErrors,
  importX509,
  jwtVerify,
  type CryptoKey,
  type JWTPayload,
} from 'jose';
import { AppError } from '../../errors/app-error.js';
import type { Challenge } from '../../errors/www-authenticate.js';
import { authPoliciesRepository } from '../../repositories/auth-policies-repository.js';
import {
  externalJwtSignersRepository,
  type ExternalJwtSigner,
} from '../../repositories/external-jwt-signers-repository.js';
import { identitiesRepository, type Identity } from '../../repositories/identities-repository.js';
import { isDisabled } from './identity-status.js';
import type { JwksCache } from './jwks-cache.js';
import type { PrimaryAuthResult } from './primary-result.js';

export interface ExtJwtMethodDeps {
  knex: Knex;
  jwks: JwksCache;
  now?: () => Date;
  /** Seconds of clock skew tolerated on `exp`/`nbf`/`iat` between us and the IdP. */
  clockToleranceSeconds?: number;
  /**
   * Where `checkSecondary` finds its signer (an in-memory cache, because it runs on
   * every API request and a bearer request reads nothing from the database). Default: the database.
   */
  findSigner?: (id: string) => Promise<ExternalJwtSigner | undefined>;
}

type Failure = Challenge['error'];
type Realm = 'svc-primary-ext-jwt' | 'svc-secondary-ext-jwt';

// Asymmetric only: a signer publishes a public key, so HS* (shared secret) and `none` never apply.
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
// At most 10 challenges when the request could have meant any enabled signer: headers stay small.
const MAX_CHALLENGES = 10;
const DESCRIPTIONS: Record<Failure, string> = {
  missing: 'no matching token was provided',
  invalid: 'token is invalid',
  expired: 'token expired',
};

const challenge = (realm: Realm, error: Failure, signer: { id: string; issuer: string }): Challenge => ({
  scheme: 'Bearer',
  realm,
  error,
  description: DESCRIPTIONS[error],
  id: signer.id,
  issuer: signer.issuer,
});

/** The issuer a token claims, read before any verification: it only picks the signer to verify with. */
function claimedIssuer(token: string): string | undefined {
  try {
    const { iss } = decodeJwt(token);
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}

/** `claimsProperty` is a claim name or a JSON pointer (`/sub`, `/user/id`; RFC 6901 escapes). */
function claimValue(payload: JWTPayload, property: string): string | undefined {
  const path = property.replace(/^\//, '').split('/');
  let value: unknown = payload;
  for (const raw of path) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * A JWT that claims to live longer than the signer allows is refused: a stolen long-lived JWT
 * would be a password that cannot be changed. Without `iat` the lifetime left (`exp − now`) is
 * what counts, with the clock skew allowed, as the IdP's clock may run ahead of ours.
 */
function checkLifetime(signer: ExternalJwtSigner, payload: JWTPayload, at: Date, skew: number): void {
  const maxSeconds = signer.maxTokenLifetimeMinutes * 60;
  const exp = payload.exp!;
  const tooLong =
    payload.iat === undefined
      ? exp - at.getTime() / 1000 > maxSeconds + skew
      : exp - payload.iat > maxSeconds;
  if (tooLong) {
    throw new joseErrors.JWTClaimValidationFailed(
      `"exp" claim timestamp check failed (the token may live at most ${maxSeconds} seconds)`,
      payload,
      'exp',
      'check_failed',
    );
  }
}

const failureOf = (err: unknown): Failure => (err instanceof joseErrors.JWTExpired ? 'expired' : 'invalid');

/**
 * External JWT authentication: the token's claimed `iss` picks an enabled
 * signer, whose key (certPem, or its JWKS) must verify signature, `exp`, `iss` and `aud`; the
 * configured claim then names the identity by `externalId` or id. Every refusal is a 401 with a
 * `svc-primary-ext-jwt` challenge naming the signer (`id`, `issuer`).
 */
export function createExtJwtMethod({
  knex,
  jwks,
  now = () => new Date(),
  clockToleranceSeconds = 30,
  findSigner = (id) => externalJwtSignersRepository.findById(knex, id),
}: ExtJwtMethodDeps) {
  const certKeys = new Map<string, Promise<CryptoKey>>();

  /** The signer's certificate as a key for the token's algorithm (jose refuses a mismatched type). */
  function certKey(signer: ExternalJwtSigner, token: string): Promise<CryptoKey> {
    const { alg, kid } = decodeProtectedHeader(token);
    if (typeof alg !== 'string' || !ALGORITHMS.includes(alg)) throw new joseErrors.JOSEAlgNotAllowed();
    if (signer.kid && kid !== undefined && kid !== signer.kid)
      throw new joseErrors.JWSSignatureVerificationFailed();
    const cacheKey = `${alg}\n${signer.certPem}`;
    let key = certKeys.get(cacheKey);
    if (!key) {
      key = importX509(signer.certPem!, alg);
      key.catch(() => certKeys.delete(cacheKey));
      if (certKeys.size > 256) certKeys.clear();
      certKeys.set(cacheKey, key);
    }
    return key;
  }

  async function verify(signer: ExternalJwtSigner, token: string): Promise<JWTPayload> {
    // The audience is always checked, so a token the IdP issued to another application is refused (signers
    // cannot be saved without one).
    if (!signer.audience) throw new Error('external JWT signer without an audience');
    const currentDate = now();
    const options = {
      issuer: signer.issuer,
      audience: signer.audience,
      algorithms: ALGORITHMS,
      requiredClaims: ['exp'],
      clockTolerance: clockToleranceSeconds,
      currentDate,
    };
    const { payload } = signer.certPem
      ? await jwtVerify(token, await certKey(signer, token), options)
      : await jwtVerify(token, jwks.keysFor(signer.jwksEndpoint!), options);
    // jose checks `iat` against the clock only together with maxTokenAge. A token issued later
    // than now, beyond the skew allowed on exp/nbf, was not minted by an IdP with a sane clock
    // (RFC 7519 §4.1.6): refuse it rather than let it outlive its real lifetime.
    if (payload.iat !== undefined && payload.iat > currentDate.getTime() / 1000 + clockToleranceSeconds) {
      throw new joseErrors.JWTClaimValidationFailed(
        '"iat" claim timestamp check failed (it should be in the past)',
        payload,
        'iat',
        'check_failed',
      );
    }
    checkLifetime(signer, payload, currentDate, clockToleranceSeconds);
    return payload;
  }

  async function findIdentity(signer: ExternalJwtSigner, payload: JWTPayload): Promise<Identity | undefined> {
    const claim = claimValue(payload, signer.claimsProperty);
    if (claim === undefined) return undefined;
    return signer.useExternalId
      ? identitiesRepository.findByExternalId(knex, claim)
      : identitiesRepository.findById(knex, claim);
  }

  /** A verified token's identity, if its policy lets it in through this signer. */
  async function admit(signer: ExternalJwtSigner, payload: JWTPayload): Promise<PrimaryAuthResult> {
    const refuse = (detail: string) =>
      new AppError('INVALID_AUTH', {
        detail,
        challenges: [challenge('svc-primary-ext-jwt', 'invalid', signer)],
      });
    const identity = await findIdentity(signer, payload);
    const policy = identity && (await authPoliciesRepository.findById(knex, identity.authPolicyId));
    if (!identity || !policy) throw refuse('no identity matches the token');
    const { allowed, allowedSigners } = policy.primary.extJwt;
    if (!allowed) throw refuse('policy does not allow ext-jwt');
    if (allowedSigners.length > 0 && !allowedSigners.includes(signer.id))
      throw refuse('signer not allowed by policy');
    if (isDisabled(identity, now())) throw refuse('identity disabled or locked');
    return { identity, policy, amr: ['ext-jwt'], isCertExtendable: false, signerId: signer.id };
  }

  function tokensFrom(signers: ExternalJwtSigner[], tokens: string[]) {
    return tokens.flatMap((token) => {
      const iss = claimedIssuer(token);
      const signer = iss === undefined ? undefined : signers.find((s) => s.issuer === iss);
      return signer ? [{ token, signer }] : [];
    });
  }

  return {
    async authenticatePrimary(tokens: string[]): Promise<PrimaryAuthResult> {
      const signers = await externalJwtSignersRepository.listEnabled(knex);
      const candidates = tokensFrom(signers, tokens);
      if (candidates.length === 0) {
        const error: Failure = tokens.length === 0 ? 'missing' : 'invalid';
        throw new AppError('INVALID_AUTH', {
          detail: 'no JWT of an enabled signer',
          challenges: signers.slice(0, MAX_CHALLENGES).map((s) => challenge('svc-primary-ext-jwt', error, s)),
        });
      }
      const failures = new Map<string, Challenge>();
      let refused: AppError | undefined;
      // With the secondary factor's JWT beside it, the primary is whichever token the policy
      // admits as primary, in any header order; a refusal is reported only when none is.
      for (const { token, signer } of candidates) {
        let payload: JWTPayload;
        try {
          payload = await verify(signer, token);
        } catch (err) {
          failures.set(signer.id, challenge('svc-primary-ext-jwt', failureOf(err), signer));
          continue;
        }
        try {
          return await admit(signer, payload);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          refused ??= err;
        }
      }
      if (refused) throw refused;
      throw new AppError('INVALID_AUTH', {
        detail: 'external JWT did not verify',
        challenges: [...failures.values()].slice(0, MAX_CHALLENGES),
      });
    },

    /**
     * The secondary factor of a policy naming `signerId`: some token among
     * `tokens` must verify against that signer and, when `identity` is given, name that identity
     * (another user's JWT from the same IdP is no second factor for this one).
     */
    async checkSecondary(
      tokens: string[],
      signerId: string,
      identity?: Pick<Identity, 'id' | 'externalId'>,
    ): Promise<void> {
      const signer = await findSigner(signerId);
      const unauthorized = (error: Failure) =>
        new AppError('UNAUTHORIZED', {
          message: 'a valid JWT of the secondary external JWT signer is required',
          challenges: [challenge('svc-secondary-ext-jwt', error, signer ?? { id: signerId, issuer: '' })],
        });
      if (!signer || !signer.enabled) throw unauthorized('missing');
      const candidates = tokensFrom([signer], tokens);
      if (candidates.length === 0) throw unauthorized('missing');
      let failure: Failure = 'invalid';
      for (const { token } of candidates) {
        try {
          const payload = await verify(signer, token);
          const claim = claimValue(payload, signer.claimsProperty);
          const expected = identity && (signer.useExternalId ? identity.externalId : identity.id);
          if (identity === undefined || (claim !== undefined && claim === expected)) return;
        } catch (err) {
          if (failureOf(err) === 'expired') failure = 'expired';
        }
      }
      throw unauthorized(failure);
    },
  };
}

export type ExtJwtMethod = ReturnType<typeof createExtJwtMethod>;
