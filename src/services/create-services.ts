import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config } from '../config/load-config.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { AppError } from '../errors/app-error.js';
import { challenges } from '../errors/www-authenticate.js';
import type { Principal } from '../middleware/principal.js';
import type { PrincipalResolver } from '../middleware/authenticate.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import type { RouteDeps } from '../routes/route-deps.js';
import { createSessionService } from './session-service.js';
import { createRevocationService } from './revocation-service.js';
import { createLoginLockout } from './auth/login-lockout.js';
import { createPasswordMethod } from './auth/password-method.js';
import { isDisabled } from './auth/identity-status.js';
import { createIdentityView } from './identity-view.js';
import type { PkiMaterial } from './pki-service.js';

export interface ServiceDeps {
  config: Config;
  knex: Knex;
  box: SecretBox;
  pki: PkiMaterial;
  logger: Logger;
}

/** Wires services together; every dependency is passed explicitly (architecture.md). */
export async function createServices({ config, knex, pki, logger }: ServiceDeps) {
  const sessionTimeout = config.edge?.api.sessionTimeout ?? 1800;
  const oidc = config.edge?.oidc;
  const sessions = createSessionService({ db: knex, sessionTimeout });
  const revocations = createRevocationService({
    retentionSeconds: () =>
      Math.max(
        sessionTimeout,
        oidc?.accessTokenDuration ?? 0,
        oidc?.refreshTokenDuration ?? 0,
        oidc?.maxSessionDuration ?? 0,
      ),
  });
  const lockout = createLoginLockout({ knex, revocations });
  const passwordMethod = createPasswordMethod({ knex, lockout });
  const identityView = createIdentityView({ signEnrollmentJwt: async () => '' });

  const principals: PrincipalResolver = {
    async session(token: string): Promise<Principal> {
      const session = await sessions.resolve(token);
      const identity = await identitiesRepository.findById(knex, session.identityId);
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
        amr: session.amr,
        configTypes: session.configTypes,
        isCertExtendable: session.isCertExtendable,
        mfaPending: session.mfaRequired && !session.mfaComplete,
      };
    },
  };

  const routeDeps: RouteDeps = {
    config,
    knex,
    logger,
    pki,
    sessions,
    passwordMethod,
    principals,
    identityView,
    findIdentity: (id) => identitiesRepository.findById(knex, id),
  };

  const janitor = setInterval(() => {
    void knex('api_sessions')
      .where('expires_at', '<', new Date())
      .delete()
      .catch((err: unknown) => logger.warn({ err }, 'session clean-up failed'));
  }, 60_000);
  janitor.unref();

  return {
    sessions,
    revocations,
    routeDeps,
    async stop() {
      clearInterval(janitor);
    },
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
