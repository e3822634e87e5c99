import type { Knex } from 'knex';
import { AppError } from '../errors/app-error.js';
import { challenges } from '../errors/www-authenticate.js';
import type { Principal } from './auth/principal.js';
import { authPoliciesRepository } from '../repositories/auth-policies-repository.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import { isDisabled } from './auth/identity-status.js';
import type { SessionService } from './session-service.js';

/**
 * The caller behind a legacy `svc-session` token: database-backed by nature,
 * so the identity and its policy are read fresh on every request.
 */
export function createLegacyPrincipals({ knex, sessions }: { knex: Knex; sessions: SessionService }) {
  return async function legacyPrincipal(token: string): Promise<Principal> {
    const session = await sessions.resolve(token);
    const identity = await identitiesRepository.findById(knex, session.identityId);
    if (!identity || isDisabled(identity, new Date())) {
      throw new AppError('UNAUTHORIZED', { challenges: [challenges.sessionInvalid()] });
    }
    const policy = await authPoliciesRepository.findById(knex, identity.authPolicyId);
    return {
      identityId: identity.id,
      identityName: identity.name,
      isAdmin: identity.isAdmin,
      sessionId: session.id,
      kind: 'legacy',
      expiresAt: session.expiresAt,
      amr: session.amr,
      configTypes: session.configTypes,
      isCertExtendable: session.isCertExtendable,
      mfaPending: session.mfaRequired && !session.mfaComplete,
      mfaRequired: session.mfaRequired,
      mfaComplete: session.mfaComplete,
      scopes: [],
      requireExtJwtSigner: policy?.secondary.requireExtJwt ?? null,
      externalId: identity.externalId,
    };
  };
}
