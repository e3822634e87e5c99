import type { StoredOidcPayload } from '../repositories/oidc-payloads-repository.js';
import type { Identity } from '../repositories/identities-repository.js';
import type { LoginFacts } from './oidc-sessions.js';

/** What one read of a code or refresh token brought along of its grant (see tokenWithGrantRepository). */
export interface PrefetchedGrant {
  /** The code's or refresh token's account: `identity` answers only for this id. */
  accountId: string | null;
  grant: StoredOidcPayload | undefined;
  /** Undefined when the facts are gone or their API session has ended. */
  facts: LoginFacts | undefined;
  identity: Identity | undefined;
  /** The identity's policy's `secondary.requireExtJwt`, read with it (null: none required). */
  requireExtJwtSigner: string | null;
}

/**
 * A code exchange or a refresh grant reads its code or refresh token, grant, login facts, API
 * session and identity in one statement; the provider then asks for them one by one within the
 * same request. Kept per request (the provider's context object), so nothing outlives the request
 * that read it and every new request reads the database again: revocations, deletions and expiry
 * apply as with separate reads.
 */
export function createGrantPrefetch() {
  const byRequest = new WeakMap<object, Map<string, PrefetchedGrant>>();
  return {
    remember(ctx: object | undefined, grantId: string, value: PrefetchedGrant): void {
      if (!ctx) return;
      let byGrant = byRequest.get(ctx);
      if (!byGrant) byRequest.set(ctx, (byGrant = new Map()));
      byGrant.set(grantId, value);
    },
    /** Undefined when this request read nothing of the grant yet (the caller reads it then). */
    get(ctx: object | undefined, grantId: string): PrefetchedGrant | undefined {
      return ctx ? byRequest.get(ctx)?.get(grantId) : undefined;
    },
    /** The grant was written or destroyed within the request: later reads go to the database. */
    forget(ctx: object | undefined, grantId: string): void {
      if (ctx) byRequest.get(ctx)?.delete(grantId);
    },
  };
}

export type GrantPrefetch = ReturnType<typeof createGrantPrefetch>;
