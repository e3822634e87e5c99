import { AppError } from '../errors/app-error.js';
import { challenges } from '../errors/www-authenticate.js';
import type { Principal } from './auth/principal.js';
import { isDisabled } from './auth/identity-status.js';
import type { IdentityContextCache } from './identity-context.js';
import type { SessionService } from './session-service.js';

/**
 * The caller behind a legacy `svc-session` token, from memory in the steady state: the session
 * from the session service's cache (a logout publishes an `api_session` event), the identity and
 * its policy from the in-memory identity context. Every instance drops both on the identity events
 * that deleting, disabling, enabling, a privilege or policy change publish (those that end access
 * also delete the identity's session rows in the same transaction).
 */
export function createLegacyPrincipals({
  sessions,
  identities,
}: {
  sessions: SessionService;
  identities: Pick<IdentityContextCache, 'get'>;
}) {
  return async function legacyPrincipal(token: string): Promise<Principal> {
    const session = await sessions.resolve(token);
    const identity = await identities.get(session.identityId);
    if (!identity || isDisabled(identity, new Date())) {
      throw new AppError('UNAUTHORIZED', { challenges: [challenges.sessionInvalid()] });
    }
    return {
      identityId: identity.id,
      identityName: identity.name,
      isAdmin: identity.isAdmin,
      sessionId: session.id,
      kind: 'legacy',
      expiresAt: session.expiresAt,
      authTime: session.createdAt,
      amr: session.amr,
      configTypes: session.configTypes,
      isCertExtendable: session.isCertExtendable,
      mfaPending: session.mfaRequired && !session.mfaComplete,
      mfaRequired: session.mfaRequired,
      mfaComplete: session.mfaComplete,
      scopes: [],
      requireExtJwtSigner: identity.requireExtJwtSigner,
      externalId: identity.externalId,
    };
  };
}
