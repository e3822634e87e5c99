import type { Logger } from 'pino';
import type { Config } from '../config/load-config.js';
import { EDGE_DEFAULTS } from '../config/config-schema.js';
import type { SecretBox } from '../crypto/secret-box.js';
import type { PrincipalResolver } from '../middleware/authenticate.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import type { RouteDeps } from '../routes/route-deps.js';
import { createRateLimiter } from '../middleware/rate-limit.js';
import { createSessionService } from './session-service.js';
import { startJanitor } from './janitor.js';
import { createLegacyPrincipals } from './legacy-principals.js';
import { createRevocationService } from './revocation-service.js';
import { createLoginLockout } from './auth/login-lockout.js';
import { createPasswordMethod } from './auth/password-method.js';
import { createIdentityView } from './identity-view.js';
import type { PkiMaterial } from './pki-service.js';
import type { Database } from '../db/create-database.js';
import { createRevocationState } from './revocation-state.js';
import { createIdentityContextCache } from './identity-context.js';
import { createTotpService } from './mfa/totp-service.js';
import { createEnrollmentJwtSigner } from './enrollment-jwt.js';
import { createEnrollmentService } from './enrollment-service.js';
import { createIdentityService } from './identity-service.js';
import { createAuthenticatorService } from './authenticator-service.js';
import { createEnrollmentCompletion } from './enrollment-completion.js';
import { createEnrollmentTokens } from './enrollment-tokens.js';
import { createPolicyService } from './policy-service.js';
import { createSignerService } from './signer-service.js';
import { createCaService } from './ca-service.js';
import { createCertMethod } from './auth/cert-method.js';
import { createExtJwtMethod } from './auth/ext-jwt-method.js';
import { createJwksCache } from './auth/jwks-cache.js';
import { createOidc } from '../oidc/create-oidc.js';
import { createSignerCache } from './auth/signer-cache.js';
import { externalJwtSignersRepository } from '../repositories/external-jwt-signers-repository.js';
import { authPoliciesRepository } from '../repositories/auth-policies-repository.js';
import { createSecondFactors } from '../oidc/second-factors.js';

export interface ServiceDeps {
  config: Config;
  database: Database;
  box: SecretBox;
  pki: PkiMaterial;
  logger: Logger;
}

/** Wires services together; every dependency is passed explicitly (architecture.md). */
export async function createServices({ config, database, box, pki, logger }: ServiceDeps) {
  const { knex } = database;
  // Without an edge section nothing reaches these services, but they are built all the same.
  const edge = config.edge ?? EDGE_DEFAULTS;
  const sessionTimeout = edge.api.sessionTimeout;
  const oidc = config.edge?.oidc;
  const sessions = createSessionService({ db: knex, sessionTimeout });
  // Revocations are remembered as long as an access token they cover can live (plus clock
  // margin); refresh tokens and legacy sessions are checked against the database anyway.
  const revocationState = createRevocationState({ database, logger });
  const revocations = createRevocationService({
    retentionSeconds: () => (oidc?.accessTokenDuration ?? sessionTimeout) + 60,
    // A failed read is retried by the one-second catch-up; it must not fail the admin's request.
    published: () => revocationState.refresh().catch(() => undefined),
  });
  const identityContext = createIdentityContextCache({ knex });
  revocationState.onIdentityRevoked((id) => identityContext.invalidate(id));
  await revocationState.start();
  const lockout = createLoginLockout({ knex, revocations });
  const passwordMethod = createPasswordMethod({ knex, lockout });
  const policies = createPolicyService({ knex, revocations });
  const signers = createSignerService({ knex });
  const cas = createCaService({ knex });
  const certMethod = createCertMethod({ knex, pki });
  // Issue 5: the secondary external JWT is checked on every API request, its signer from memory.
  const signerCache = createSignerCache({ load: (id) => externalJwtSignersRepository.findById(knex, id) });
  const extJwtMethod = createExtJwtMethod({ knex, jwks: createJwksCache(), findSigner: signerCache.get });
  const signEnrollmentJwt = createEnrollmentJwtSigner({
    server: pki.server,
    // decisions.md §3: iss is the advertised address of the first listener hosting edge-client.
    issuer: () => {
      const listener = config.listeners.find((l) => l.apis.has('edge-client')) ?? config.listeners[0];
      return `https://${listener?.addresses[0] ?? config.address}`;
    },
  });
  const enrollmentTokens = createEnrollmentTokens(box);
  const sealedTokens = await enrollmentTokens.protectPlainTokens(knex);
  if (sealedTokens > 0) logger.info({ enrollments: sealedTokens }, 'sealed plain enrollment tokens');
  const identityView = createIdentityView({ signEnrollmentJwt, tokens: enrollmentTokens });
  const enrollments = createEnrollmentService({
    knex,
    enrollmentDuration: edge.enrollment.duration,
    signJwt: signEnrollmentJwt,
    tokens: enrollmentTokens,
  });
  const identities = createIdentityService({ knex, revocations, enrollments, view: identityView });
  const authenticators = createAuthenticatorService({ knex });
  const enroll = createEnrollmentCompletion({
    knex,
    pki,
    trustDomain: config.pki.trustDomain,
    tokens: enrollmentTokens,
  });
  const totp = createTotpService({ knex, box, issuer: edge.totp.issuer });
  const secondFactors = createSecondFactors({ totp, extJwt: extJwtMethod, findSigner: signerCache.get });

  const principals: PrincipalResolver = {
    session: createLegacyPrincipals({ knex, sessions }),
    // Spec 5.3 item 2: the JWT must name the caller (externalId or id, as the signer says).
    secondaryExtJwt: (tokens, p) =>
      extJwtMethod.checkSecondary(tokens, p.requireExtJwtSigner!, {
        id: p.identityId,
        externalId: p.externalId ?? null,
      }),
  };

  const routeDeps: RouteDeps = {
    sessions,
    passwordMethod,
    principals,
    totp,
    identities,
    enrollments,
    authenticators,
    enroll,
    policies,
    signers,
    cas,
    certMethod,
    extJwtMethod,
    loginLimiter: createRateLimiter(config.rateLimits),
    authorizationLimiter: createRateLimiter({
      enabled: config.rateLimits.enabled,
      perSecond: config.rateLimits.authorizationPerSecond,
      burst: config.rateLimits.authorizationBurst,
    }),
    findIdentity: (id) => identitiesRepository.findById(knex, id),
  };

  // OIDC provider, signing keys and the first bearer authenticator (issue 4; engineer D).
  const oidcProvider = config.edge
    ? await createOidc({
        config,
        knex,
        box,
        logger,
        revocations,
        revocationState,
        identityContext,
        findIdentity: routeDeps.findIdentity,
        findPolicy: (id) => authPoliciesRepository.findById(knex, id),
        factors: secondFactors,
        totp,
      })
    : undefined;
  if (oidcProvider) {
    principals.bearer = oidcProvider.verifier.bearer;
    routeDeps.oidc = oidcProvider;
  }

  const stopJanitor = startJanitor(knex, logger);

  return {
    sessions,
    revocations,
    totp,
    routeDeps,
    async stop() {
      stopJanitor();
      oidcProvider?.stop();
      await revocationState.stop();
    },
  };
}

export type Services = Awaited<ReturnType<typeof createServices>>;
