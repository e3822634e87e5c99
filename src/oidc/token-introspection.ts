import type { Knex } from 'knex';
import { isAppError } from '../errors/app-error.js';
import { tokenWithGrantRepository } from '../repositories/token-with-grant-repository.js';
import type { IdentityPermission } from '../schemas/identity-schemas.js';
import { isDisabled } from '../services/auth/identity-status.js';
import type { Principal } from '../services/auth/principal.js';
import type { IdentityContextCache } from '../services/identity-context.js';
import type { RevocationState } from '../services/revocation-state.js';
import { confirmationOf, liveFacts } from './oidc-sessions.js';
import type { TokenVerifier } from './token-verifier.js';

/** The identity permission that allows a caller other than an admin to introspect tokens. */
export const INTROSPECTION_PERMISSION: IdentityPermission = 'token-introspection';

/** RFC 7662 §2.2 for a token that is live; the members oidc-provider's own introspection answers. */
export interface ActiveToken {
  active: true;
  sub: string;
  client_id?: string;
  scope?: string;
  exp: number;
  iat?: number;
  iss: string;
  aud?: string | string[];
  /** The API session the token belongs to. */
  z_asid: string;
  /** Access tokens only. */
  token_type?: 'Bearer';
  jti?: string;
  cnf?: Record<string, unknown>;
  /** The signer whose JWT the identity's policy requires beside every request (`secondary.requireExtJwt`). */
  svc_secondary_ext_jwt?: string;
}

export type IntrospectionResponse = ActiveToken | { active: false };

export interface TokenIntrospectionDeps {
  knex: Knex;
  verifier: Pick<TokenVerifier, 'verifyAccessToken'>;
  /** In memory and kept current across instances by the change feed (ADR 0006). */
  identities: Pick<IdentityContextCache, 'get'>;
  revocations: Pick<RevocationState, 'isSessionRevoked' | 'isIdentityTokenRevoked'>;
  now?: () => Date;
}

const INACTIVE = { active: false } as const;
/** Longer than any token of ours: answered without decoding or hashing it. */
const MAX_TOKEN_LENGTH = 16 * 1024;
/** oidc-provider's opaque tokens (refresh tokens) are base64url; anything else names no row. */
const OPAQUE_TOKEN = /^[A-Za-z0-9_-]{1,512}$/;

const epoch = (d: Date) => Math.floor(d.getTime() / 1000);
const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

type Optional = Omit<ActiveToken, 'active' | 'sub' | 'exp' | 'iss' | 'z_asid' | 'token_type'>;

/** The required members, then each optional one that has a value (none is sent as null). */
function withOptional(required: Omit<ActiveToken, keyof Optional>, optional: Optional): ActiveToken {
  const token: ActiveToken = { ...required };
  for (const [key, value] of Object.entries(optional) as [keyof Optional, unknown][]) {
    if (value !== undefined) (token as unknown as Record<string, unknown>)[key] = value;
  }
  return token;
}

/**
 * Token introspection (RFC 7662) of our own tokens for resource servers, at our route
 * `/oidc/token/introspection` rather than oidc-provider's (whose callers are OAuth clients, and
 * which knows neither our revocations nor our identities). An access token is checked like a bearer
 * request, from memory; a refresh token is read with its grant, login facts, API session and
 * identity in one statement. Whatever is not live answers `{active: false}` and nothing more.
 */
export function createTokenIntrospection(deps: TokenIntrospectionDeps) {
  const now = deps.now ?? (() => new Date());

  async function accessToken(token: string): Promise<IntrospectionResponse> {
    let verified: Awaited<ReturnType<TokenVerifier['verifyAccessToken']>>;
    try {
      verified = await deps.verifier.verifyAccessToken(token);
    } catch (err) {
      if (isAppError(err) && err.status === 401) return INACTIVE;
      throw err;
    }
    const { claims } = verified;
    // A disabled identity's tokens were revoked with the disabling; this holds between the commit
    // and the feed too, once the entry was reloaded.
    const identity = await deps.identities.get(claims.sub);
    if (!identity || isDisabled(identity, now())) return INACTIVE;
    return withOptional(
      {
        active: true,
        sub: claims.sub,
        exp: claims.exp,
        iss: String(claims.iss),
        z_asid: claims.z_asid,
        token_type: 'Bearer',
      },
      {
        client_id: str(claims.client_id),
        scope: str(claims.scope),
        iat: num(claims.iat),
        aud: typeof claims.aud === 'string' || Array.isArray(claims.aud) ? claims.aud : undefined,
        jti: str(claims.jti),
        cnf: isObject(claims.cnf) ? claims.cnf : undefined,
        svc_secondary_ext_jwt: identity.requireExtJwtSigner ?? undefined,
      },
    );
  }

  /** As the refresh grant itself would see it: `findWithGrant` and `findAccount` (account-policy.ts). */
  async function refreshToken(token: string, issuer: string): Promise<IntrospectionResponse> {
    const at = now();
    const found = await tokenWithGrantRepository.find(deps.knex, 'RefreshToken', token, at);
    if (!found || found.token.consumedAt || !found.grant) return INACTIVE;
    const { payload } = found.token;
    const exp = num(payload.exp);
    if (exp === undefined || exp <= epoch(at)) return INACTIVE;
    const facts = liveFacts(found.facts, found.sessionExpiresAt, at);
    const { identity } = found;
    if (!facts || !identity || identity.id !== facts.accountId || found.accountId !== identity.id) {
      return INACTIVE;
    }
    if (found.grant.payload.accountId !== identity.id || found.grant.payload.clientId !== payload.clientId) {
      return INACTIVE;
    }
    if (isDisabled(identity, at) || identity.tokenGeneration > facts.tokenGeneration) return INACTIVE;
    // What the feed brought since the read began (a logout, a revocation on another instance).
    if (deps.revocations.isSessionRevoked(facts.apiSessionId)) return INACTIVE;
    if (deps.revocations.isIdentityTokenRevoked(identity.id, facts.tokenGeneration)) return INACTIVE;
    return withOptional(
      {
        active: true,
        sub: identity.id,
        exp,
        // The issuer its login went through (it is redeemed there only); older logins: this one.
        iss: str(facts.issuer) ?? issuer,
        z_asid: facts.apiSessionId,
      },
      {
        client_id: str(payload.clientId),
        scope: str(payload.scope),
        iat: num(payload.iat),
        // A bound grant's refresh token is bound as its access tokens are (RFC 8705 §3).
        cnf: confirmationOf(facts),
        svc_secondary_ext_jwt: found.requireExtJwtSigner ?? undefined,
      },
    );
  }

  return {
    /** Admins, and identities granted `token-introspection` (checked from memory on every call). */
    async mayIntrospect(caller: Principal): Promise<boolean> {
      if (caller.isAdmin) return true;
      const identity = await deps.identities.get(caller.identityId);
      return identity !== undefined && identity.permissions.includes(INTROSPECTION_PERMISSION);
    },

    /**
     * Our access tokens are JWTs and our refresh tokens opaque, so the token's form says where to
     * look and `token_type_hint` is not needed (RFC 7662 §2.1 lets a server ignore it). `issuer`
     * is the issuer the request came to.
     */
    async introspect(token: string, issuer: string): Promise<IntrospectionResponse> {
      if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return INACTIVE;
      if (token.includes('.')) return accessToken(token);
      return OPAQUE_TOKEN.test(token) ? refreshToken(token, issuer) : INACTIVE;
    },
  };
}

export type TokenIntrospection = ReturnType<typeof createTokenIntrospection>;
