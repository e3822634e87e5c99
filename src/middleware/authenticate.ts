import type { Context, Next } from 'koa';
import { AppError } from '../errors/app-error.js';
import { challenges } from '../errors/www-authenticate.js';
import type { BearerVerifier, Principal } from './principal.js';

/**
 * Resolves when `tokens` hold a valid JWT of the principal's secondary signer that names its
 * identity; otherwise throws 401 UNAUTHORIZED with the `svc-secondary-ext-jwt` challenge.
 */
export type SecondaryExtJwtCheck = (tokens: string[], principal: Principal) => Promise<void>;

export interface PrincipalResolver {
  /** Legacy `svc-session` tokens. */
  session(token: string): Promise<Principal>;
  bearer?: BearerVerifier;
  /** The secondary external JWT gate; without it such principals are refused. */
  secondaryExtJwt?: SecondaryExtJwtCheck;
}

/** `Authorization: Bearer a, Bearer b` and repeated headers (joined by Node with ", "). */
export function bearerTokens(header: string | undefined): string[] {
  if (!header) return [];
  return header
    .split(/,\s*(?=bearer\s)/i)
    .map((part) => /^\s*bearer\s+(\S+)\s*$/i.exec(part)?.[1])
    .filter((t): t is string => t !== undefined);
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
    else if (tokens.length > 0 && resolver.bearer)
      principal = await resolver.bearer.verify(tokens, ctx.headers);
    else if (tokens.length > 0)
      throw new AppError('UNAUTHORIZED', { challenges: [challenges.bearerInvalid()] });
    else throw new AppError('UNAUTHORIZED', { challenges: challenges.missing() });

    if (principal.mfaPending && !options.allowMfaPending) {
      throw new AppError('UNAUTHORIZED', { message: 'the MFA step of this session is still outstanding' });
    }
    await secondaryExtJwtGate(resolver, tokens, principal);
    ctx.state.principal = principal;
    const seconds = Math.max(0, Math.floor((principal.expiresAt.getTime() - Date.now()) / 1000));
    ctx.set('expiration-seconds', String(seconds));
    ctx.set('expires-at', principal.expiresAt.toISOString());
    if (options.adminOnly && !principal.isAdmin) throw new AppError('FORBIDDEN');
    return next();
  };
}

/**
 * When the policy names a secondary external JWT signer, every
 * request (bearer or legacy session, Edge APIs and `/oidc/userinfo`) must also carry a valid JWT
 * of it; the access token or session alone is not enough. Fails closed when no check is wired.
 */
export async function secondaryExtJwtGate(
  resolver: PrincipalResolver,
  tokens: string[],
  principal: Principal,
) {
  const signerId = principal.requireExtJwtSigner;
  if (!signerId) return;
  if (!resolver.secondaryExtJwt) {
    throw new AppError('UNAUTHORIZED', { detail: 'no secondary external JWT check is configured' });
  }
  await resolver.secondaryExtJwt(tokens, principal);
}

export function principalOf(ctx: Context): Principal {
  const principal = ctx.state.principal as Principal | undefined;
  if (!principal) throw new AppError('UNAUTHORIZED', { challenges: challenges.missing() });
  return principal;
}
