import type { IncomingMessage } from 'node:http';
import { errors, type FindAccount, type KoaContextWithOIDC } from 'oidc-provider';
import { isAppError } from '../errors/app-error.js';
import { formatChallenge } from '../errors/www-authenticate.js';
import { bearerTokens } from '../services/auth/bearer-tokens.js';
import type { ExtJwtMethod } from '../services/auth/ext-jwt-method.js';
import type { AuditEvent, AuditTrail } from '../services/audit-trail.js';
import type { GrantPrefetch } from './grant-prefetch.js';

export interface RefreshSecondFactorDeps {
  extJwt: Pick<ExtJwtMethod, 'checkSecondary'>;
  prefetch: Pick<GrantPrefetch, 'get'>;
  audit?: AuditTrail;
}

type GrantToken = Parameters<FindAccount>[2];

/** The whole header is bearer values (`Bearer a, Bearer b`): none of it can be client authentication. */
function onlyBearerValues(header: string, tokens: string[]): boolean {
  return tokens.length > 0 && header.split(/,\s*(?=bearer\s)/i).length === tokens.length;
}

/**
 * The secondary external JWT at the refresh grant (docs/integrating.md, secondary external JWT).
 * A policy that requires it asks for it on every request, and a refresh is one: without it the
 * grant would keep minting tokens for a login that no longer holds its second factor. The client
 * sends it as at userinfo, in `Authorization: Bearer`. The dispatcher takes the bearer values off
 * every token request before the provider's client authentication reads the header (the one client
 * is public: RFC 6749 §2.3 authentication never uses the Bearer scheme), and the check runs where
 * the provider asks for the refresh token's account: before the token is rotated, so a refused
 * refresh leaves it usable. The code exchange is not checked: the login verified the JWT before
 * it issued the code.
 */
export function createRefreshSecondFactor(deps: RefreshSecondFactorDeps) {
  const tokensByRequest = new WeakMap<IncomingMessage, string[]>();

  /**
   * The identity and its required signer, as the one read of the refresh token brought them. A
   * refresh grant always has that read behind it; should it ever be missing, the refresh is
   * refused rather than let through unchecked.
   */
  function requirementOf(ctx: KoaContextWithOIDC, sub: string, grantId: string) {
    const hit = deps.prefetch.get(ctx, grantId);
    if (!hit || hit.accountId !== sub || !hit.identity) throw new errors.InvalidGrant('grant not found');
    return {
      identity: hit.identity,
      signerId: hit.requireExtJwtSigner,
      sessionId: hit.facts?.apiSessionId,
    };
  }

  async function check(ctx: KoaContextWithOIDC, sub: string, grantId: string): Promise<void> {
    const { identity, signerId, sessionId } = requirementOf(ctx, sub, grantId);
    if (!signerId) return;
    // As at the login (second-factors.ts); the grant is named by its API session, whose id is
    // not a bearer secret (the grant's id is: docs/adr/0004-hashed-token-ids.md).
    const event = (outcome: 'success' | 'failure'): AuditEvent => ({
      event: 'auth.second-factor',
      method: 'ext-jwt',
      outcome,
      identityId: identity.id,
      signerId,
      grantType: 'refresh_token',
      ...(sessionId !== undefined && { sessionId }),
      ...(outcome === 'failure' && { reason: 'no-valid-jwt-of-the-signer' }),
    });
    try {
      await deps.extJwt.checkSecondary(tokensByRequest.get(ctx.req) ?? [], signerId, identity);
      // Stored by the refresh token's consume, the refresh's next statement (postgres-adapter.ts).
      await deps.audit?.hold(event('success'));
    } catch (err) {
      if (!isAppError(err) || err.code !== 'UNAUTHORIZED') throw err;
      await deps.audit?.storeAttempt(event('failure'));
      // The challenge tells the client which JWT to bring, as at userinfo and on the Edge APIs.
      ctx.set('WWW-Authenticate', err.challenges.map(formatChallenge));
      throw new errors.InvalidGrant('a valid JWT of the secondary external JWT signer is required');
    }
  }

  return {
    /** A token request: its bearer values are kept for the check and hidden from the provider. */
    takeBearerValues(req: IncomingMessage): void {
      const header = req.headers.authorization;
      const tokens = bearerTokens(header);
      if (!header || !onlyBearerValues(header, tokens)) return;
      delete req.headers.authorization;
      tokensByRequest.set(req, tokens);
    },

    /**
     * `findAccount` that also refuses a refresh without the JWT. A rotated refresh token presented
     * again is left to the provider, which revokes its grant (RFC 9700 §4.14.2) whatever the
     * request carries.
     */
    guard(findAccount: FindAccount): FindAccount {
      return async (ctx, sub, token: GrantToken) => {
        const account = await findAccount(ctx, sub, token);
        if (account && token?.kind === 'RefreshToken' && !token.consumed && token.grantId) {
          await check(ctx, sub, token.grantId);
        }
        return account;
      };
    },
  };
}

export type RefreshSecondFactor = ReturnType<typeof createRefreshSecondFactor>;
