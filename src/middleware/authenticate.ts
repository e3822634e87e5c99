import type { Context, Next } from 'koa';
import { AppError } from '../errors/app-error.js';
import { challenges } from '../errors/www-authenticate.js';
import { bearerTokens } from '../services/auth/bearer-tokens.js';
import type { BearerVerifier, Principal } from '../services/auth/principal.js';
import { currentRequestScope } from '../services/request-scope.js';

/**
 * Resolves when `tokens` hold a valid JWT of the principal's secondary signer that names its
 * identity; otherwise throws 401 UNAUTHORIZED with the `svc-secondary-ext-jwt` challenge.
 */
export type SecondaryExtJwtCheck = (tokens: string[], principal: Principal) => Promise<void>;

export interface PrincipalResolver {
  /** Legacy `svc-session` tokens. */
  session(token: string): Promise<Principal>;
  /** `Authorization: Bearer` access tokens of the OIDC provider. */
  bearer: BearerVerifier;
  /** The secondary external JWT a policy may require beside the session or access token. */
  secondaryExtJwt: SecondaryExtJwtCheck;
}

export interface AuthenticateOptions {
  /** Let a legacy session whose MFA step is still owed through (the MFA endpoints). */
  allowMfaPending?: boolean;
  adminOnly?: boolean;
}

/**
 * Resolves the caller from `svc-session` or a bearer token and sets the expiry headers
 * on every authenticated response. No credential at all: two `missing`
 * challenges, `svc-session` and `Bearer`, so the client learns both ways in.
 */
export function authenticate(resolver: PrincipalResolver, options: AuthenticateOptions = {}) {
  return async function authenticateMiddleware(ctx: Context, next: Next) {
    const sessionToken = ctx.get('svc-session');
    const tokens = bearerTokens(ctx.get('authorization'));
    let principal: Principal;
    if (sessionToken) principal = await resolver.session(sessionToken);
    else if (tokens.length > 0) principal = await resolver.bearer.verify(tokens, ctx.req.socket);
    else throw new AppError('UNAUTHORIZED', { challenges: challenges.missing() });

    if (principal.mfaPending && !options.allowMfaPending) {
      throw new AppError('UNAUTHORIZED', { message: 'the MFA step of this session is still outstanding' });
    }
    await secondaryExtJwtGate(resolver, tokens, principal);
    ctx.state.principal = principal;
    const scope = currentRequestScope();
    if (scope) scope.actorId = principal.identityId;
    const seconds = Math.max(0, Math.floor((principal.expiresAt.getTime() - Date.now()) / 1000));
    ctx.set('expiration-seconds', String(seconds));
    ctx.set('expires-at', principal.expiresAt.toISOString());
    if (options.adminOnly && !principal.isAdmin) throw new AppError('FORBIDDEN');
    return next();
  };
}

/**
 * When the policy names a secondary external JWT signer, every request (bearer or legacy session,
 * Edge APIs and `/oidc/userinfo`) must also carry a valid JWT of it; the access token or session
 * alone is not enough.
 */
export async function secondaryExtJwtGate(
  resolver: PrincipalResolver,
  tokens: string[],
  principal: Principal,
) {
  const signerId = principal.requireExtJwtSigner;
  if (!signerId) return;
  await resolver.secondaryExtJwt(tokens, principal);
}

export function principalOf(ctx: Context): Principal {
  const principal = ctx.state.principal as Principal | undefined;
  if (!principal) throw new AppError('UNAUTHORIZED', { challenges: challenges.missing() });
  return principal;
}
