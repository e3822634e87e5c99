import type Router from '@koa/router';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { EDGE_DEFAULTS } from './config/config-schema.js';
import type { Config } from './config/load-config.js';
import type { ListenerSpec } from './config/web-listeners.js';
import type { SecretBox } from './crypto/secret-box.js';
import type { Database } from './db/create-database.js';
import { instanceLockFor } from './db/instance-lock-for.js';
import type { PrincipalResolver } from './middleware/authenticate.js';
import type { MetricsRegistry } from './services/metrics-registry.js';
import { createRateLimiter, type SharedLimiterFactory } from './middleware/rate-limit.js';
import { createOidc } from './oidc/create-oidc.js';
import { createSecondFactors } from './oidc/second-factors.js';
import { externalJwtSignersRepository } from './repositories/external-jwt-signers-repository.js';
import { identitiesRepository } from './repositories/identities-repository.js';
import { rateLimitsRepository } from './repositories/rate-limits-repository.js';
import { accountRoutes } from './routes/account-routes.js';
import { edgeRouters } from './routes/edge-routers.js';
import { oidcMiddleware } from './routes/oidc-routes.js';
import { devicePages } from './routes/oidc-device-pages.js';
import { createUserCodeThrottle, userCodeLimit } from './routes/user-code-throttle.js';
import type { RouteDeps } from './routes/route-deps.js';
import { createCertMethod } from './services/auth/cert-method.js';
import { createExtJwtMethod } from './services/auth/ext-jwt-method.js';
import { createJwksCache } from './services/auth/jwks-cache.js';
import { createLoginLockout } from './services/auth/login-lockout.js';
import { createPasswordMethod } from './services/auth/password-method.js';
import {
  createPasskeyMethod,
  PASSKEY_FAILURE_WINDOW_SECONDS,
  PASSKEY_FAILURES_PER_WINDOW,
} from './services/auth/passkey-method.js';
import { createPasskeyFactor } from './services/mfa/passkey-factor.js';
import { createSignerCache } from './services/auth/signer-cache.js';
import { createAccountSessionService } from './services/account/account-session-service.js';
import { createAuditTrail } from './services/audit-trail.js';
import { createAuditEventQuery } from './services/audit-event-query.js';
import { createApiSessionEnding } from './services/api-session-ending.js';
import { createAuthenticatorService } from './services/authenticator-service.js';
import { createCaService } from './services/ca-service.js';
import { createCertificateBlocks } from './services/certificate-blocks.js';
import { createEnrollmentCompletion } from './services/enrollment-completion.js';
import { createEnrollmentJwtSigner } from './services/enrollment-jwt.js';
import { createEnrollmentService } from './services/enrollment-service.js';
import { createEnrollmentTokens } from './services/enrollment-tokens.js';
import { createIdentityContextCache } from './services/identity-context.js';
import { createIdentityService } from './services/identity-service.js';
import { createIdentityView } from './services/identity-view.js';
import { startJanitor } from './services/janitor.js';
import { createLegacyPrincipals } from './services/legacy-principals.js';
import { createTotpService } from './services/mfa/totp-service.js';
import { createPasskeyService } from './services/passkeys/passkey-service.js';
import { createWebauthnSettings } from './services/passkeys/webauthn-settings.js';
import type { PkiMaterial } from './services/pki-service.js';
import { createPolicyService } from './services/policy-service.js';
import { createRevocationService } from './services/revocation-service.js';
import { createRevocationState } from './services/revocation-state.js';
import { createSessionLimit } from './services/session-limit.js';
import { createSessionService } from './services/session-service.js';
import { createApiSessionView } from './services/api-session-view.js';
import { createSignerService } from './services/signer-service.js';
import { createWebhookDeliveryAdmin } from './services/webhooks/webhook-delivery-admin.js';
import { createWebhookService } from './services/webhooks/webhook-service.js';
import { createOutboundPost } from './services/webhooks/outbound-post.js';
import { DEFAULT_LEASE_MS, DELIVERY_TIMEOUT_MS } from './services/webhooks/webhook-delivery.js';
import { startWebhookDispatcher, type WebhookOverrides } from './services/webhooks/webhook-dispatcher.js';
import { createVersionReport } from './services/version-report.js';

export interface ComposeDeps {
  config: Config;
  /** The listeners with the ports they actually bound (port 0 in the configuration is resolved). */
  listeners: readonly ListenerSpec[];
  database: Database;
  box: SecretBox;
  pki: PkiMaterial;
  logger: Logger;
  /** The Prometheus registry that audit events, grants, password checks and the feed report to. */
  metrics: MetricsRegistry;
  /** Webhook delivery's parts that tests replace. */
  webhooks?: WebhookOverrides;
}

/** The routers of the edge APIs, mounted per listener by `buildKoaApp`. */
export interface EdgeRouters {
  client: Router;
  management: Router;
  account: Router;
  oidc: Middleware;
}

/**
 * The domain services: everything below the HTTP layer, built whether or not the edge APIs are
 * served. Nothing here knows about routes, middleware or the OIDC provider.
 */
async function createDomainServices({ config, listeners, database, box, pki, logger, metrics }: ComposeDeps) {
  const { knex } = database;
  const audit = createAuditTrail(logger, knex);
  audit.subscribe(metrics.countAuditEvent);
  // Without an edge section nothing reaches these services, but they are built all the same.
  const edge = config.edge ?? EDGE_DEFAULTS;
  const sessionTimeout = edge.api.sessionTimeout;
  const oidc = config.edge?.oidc;
  // Revocations are remembered as long as an access token they cover can live (plus clock
  // margin); refresh tokens are checked against the database anyway, and the legacy sessions
  // kept in memory drop an ended session as its event is applied.
  const revocationState = createRevocationState({
    database,
    logger,
    audit,
    changeFeed: config.database.changeFeed,
  });
  // The embedded database serves one process: it has no feed to listen to.
  if (database.kind === 'pg') metrics.watchRevocationListener(revocationState.isListening);
  const revocations = createRevocationService({
    retentionSeconds: () => (oidc?.accessTokenDuration ?? sessionTimeout) + 60,
    // A failed read is retried by the one-second catch-up; it must not fail the admin's request.
    published: () => revocationState.refresh().catch(() => undefined),
    audit,
  });
  // The OIDC part, built later, registers how an evicted OIDC session ends with its grant.
  const sessionLimit = createSessionLimit({ knex, revocations, audit });
  const sessions = createSessionService({
    db: knex,
    sessionTimeout,
    maxSessionDuration: edge.oidc.maxSessionDuration,
    revocations,
    limit: sessionLimit,
    audit,
  });
  revocationState.onSessionRevoked((id) => sessions.forget(id));
  const apiSessionView = createApiSessionView({ knex, maxSessionDuration: edge.oidc.maxSessionDuration });
  const lockout = createLoginLockout({ knex, revocations, audit });
  const passwordMethod = createPasswordMethod({ knex, lockout, onVerify: metrics.observePasswordVerify });
  const policies = createPolicyService({ knex, revocations, audit });
  const signers = createSignerService({ knex, audit });
  const cas = createCaService({ knex, changes: revocations, audit });
  const certificateBlocks = createCertificateBlocks({ knex, audit });
  const certMethod = createCertMethod({ knex, pki });
  // The secondary external JWT is checked on every API request: its signer comes from memory.
  const signerCache = createSignerCache({ load: (id) => externalJwtSignersRepository.findById(knex, id) });
  const extJwtMethod = createExtJwtMethod({ knex, jwks: createJwksCache(), findSigner: signerCache.get });
  const signEnrollmentJwt = createEnrollmentJwtSigner({
    server: pki.server,
    // The issuer is the advertised address of the first listener hosting edge-client, where the
    // enrollment is redeemed.
    issuer: () => {
      const listener = listeners.find((l) => l.apis.has('edge-client')) ?? listeners[0];
      return `https://${listener?.addresses[0] ?? config.address}`;
    },
  });
  const enrollmentTokens = createEnrollmentTokens(box);
  const sealedTokens = await enrollmentTokens.protectPlainTokens(knex);
  if (sealedTokens > 0) logger.info({ enrollments: sealedTokens }, 'sealed plain enrollment tokens');
  const identityView = createIdentityView({ signEnrollmentJwt, tokens: enrollmentTokens });
  const identityContext = createIdentityContextCache({
    knex,
    loadDetail: async (id) => {
      const identity = await identitiesRepository.findById(knex, id);
      return identity && (await identityView.factsOf(knex, [identity]))[0];
    },
  });
  revocationState.onIdentityRevoked((id, kind) => {
    identityContext.invalidate(id);
    if (kind === 'identity') sessions.forgetIdentity(id);
  });
  await revocationState.start();
  const enrollments = createEnrollmentService({
    knex,
    enrollmentDuration: edge.enrollment.duration,
    signJwt: signEnrollmentJwt,
    tokens: enrollmentTokens,
    changes: revocations,
    audit,
  });
  const identities = createIdentityService({
    knex,
    revocations,
    enrollments,
    view: identityView,
    context: identityContext,
    audit,
  });
  const authenticators = createAuthenticatorService({ knex, changes: revocations, audit });
  const enroll = createEnrollmentCompletion({
    knex,
    pki,
    trustDomain: config.pki.trustDomain,
    tokens: enrollmentTokens,
    changes: revocations,
    audit,
  });
  const totp = createTotpService({ knex, box, issuer: edge.totp.issuer, changes: revocations, audit });
  // Passkeys belong to the names browsers reach the login pages and the Edge APIs by.
  const webauthn = createWebauthnSettings({
    rpId: config.webauthn.rpId,
    origins: config.webauthn.origins,
    addresses: listeners
      .filter((l) => l.apis.has('edge-client') || l.apis.has('edge-oidc'))
      .flatMap((l) => l.addresses),
    trustedTls: config.tls.cert !== undefined,
  });
  // Once at start: a browser refusing every ceremony is found by comparing its address with these.
  logger.info({ rpId: webauthn.site.rpId, origins: webauthn.site.origins }, 'passkey (WebAuthn) site');
  const passkeys = createPasskeyService({ knex, rpName: edge.totp.issuer, changes: revocations, audit });
  // Counted with the identity's wrong TOTP codes: one failure budget per second factor.
  const passkeyFactor = createPasskeyFactor({ knex, passkeys, audit });
  const webhooks = createWebhookService({
    knex,
    box,
    allowPrivateTargets: config.webhooks.allowPrivateTargets,
    audit,
  });
  const webhookDeliveries = createWebhookDeliveryAdmin({ knex });
  return {
    audit,
    sessions,
    apiSessionView,
    sessionLimit,
    revocationState,
    revocations,
    identityContext,
    passwordMethod,
    policies,
    signers,
    cas,
    certificateBlocks,
    certMethod,
    signerCache,
    extJwtMethod,
    enrollments,
    identities,
    authenticators,
    enroll,
    totp,
    webauthn,
    passkeys,
    passkeyFactor,
    webhooks,
    webhookDeliveries,
  };
}

type DomainServices = Awaited<ReturnType<typeof createDomainServices>>;

/** The OIDC provider, with the second factors its login asks for and verifies. */
async function createOidcPart(deps: ComposeDeps, services: DomainServices) {
  const { knex } = deps.database;
  const userCodeThrottle = createUserCodeThrottle(
    createRateLimiter(userCodeLimit(deps.config.rateLimits.enabled), {
      name: 'device-user-code',
      shared: sharedLimiterStore(deps.config, deps.database, deps.logger),
    }),
    services.audit,
  );
  const findIdentity = (id: string) => identitiesRepository.findById(knex, id);
  const secondFactors = createSecondFactors({
    totp: services.totp,
    passkeys: services.passkeys,
    extJwt: services.extJwtMethod,
    findSigner: services.signerCache.get,
    audit: services.audit,
  });
  const oidc = await createOidc({
    config: deps.config,
    listeners: deps.listeners,
    knex,
    box: deps.box,
    logger: deps.logger,
    revocations: services.revocations,
    revocationState: services.revocationState,
    identityContext: services.identityContext,
    findIdentity,
    findIdentityWithPolicy: (id) => identitiesRepository.findWithPolicy(knex, id),
    factors: secondFactors,
    secondaryExtJwt: services.extJwtMethod,
    totp: services.totp,
    passkeys: services.passkeys,
    passkeyFactor: services.passkeyFactor,
    webauthn: services.webauthn,
    sessionLimit: services.sessionLimit,
    audit: services.audit,
    onGrant: deps.metrics.countGrant,
    janitorLock: instanceLockFor(deps.database, 'oidcJanitor'),
    devicePages,
    userCodeGuesses: userCodeThrottle.guesses,
  });
  // A deleted certificate authenticator ends the sessions bound to it, grants included.
  services.authenticators.endBoundSessionsWith(oidc.sessions.endSessionsBoundOutside);
  return { oidc, userCodeThrottle };
}

/** Webhook delivery in this process (docs/operations.md, "Webhooks"). */
function startWebhooks(
  { config, database, box, logger, metrics, webhooks }: ComposeDeps,
  audit: DomainServices['audit'],
): () => Promise<void> {
  if (webhooks?.deliver === false) return async () => undefined;
  const leaseMs = webhooks?.leaseMs ?? DEFAULT_LEASE_MS;
  const post =
    webhooks?.post ??
    createOutboundPost({
      allowPrivateTargets: config.webhooks.allowPrivateTargets,
      extraCa: config.webhooks.caPem,
      // A send ends well before its claim's lease does, so no other instance sends it meanwhile.
      timeoutMs: Math.min(DELIVERY_TIMEOUT_MS, leaseMs / 2),
    });
  return startWebhookDispatcher({
    knex: database.knex,
    box,
    post,
    audit,
    logger,
    leaseMs,
    ...(webhooks?.now && { now: webhooks.now }),
    onResult: metrics.countWebhookAttempt,
  });
}

/**
 * The store of the per-address limits when every instance must share one count. The embedded
 * database serves a single process, whose memory is the whole count.
 */
function sharedLimiterStore(
  config: Config,
  database: Database,
  logger: Logger,
): SharedLimiterFactory | undefined {
  if (config.rateLimits.store !== 'postgres') return undefined;
  if (database.kind !== 'pg') {
    logger.warn('rateLimits.store is postgres but the database is the embedded one: counting in memory');
    return undefined;
  }
  return (options) => rateLimitsRepository.limiter(database.knex, options);
}

/** Everything the route modules use, complete. */
function createRouteDeps(
  { config, database, logger, box }: ComposeDeps,
  services: DomainServices,
  { oidc, userCodeThrottle }: Awaited<ReturnType<typeof createOidcPart>>,
): RouteDeps {
  const { extJwtMethod } = services;
  const shared = sharedLimiterStore(config, database, logger);
  const principals: PrincipalResolver = {
    session: createLegacyPrincipals({ sessions: services.sessions, identities: services.identityContext }),
    bearer: oidc.verifier.bearer,
    // The JWT must name the caller (by externalId or id, as its signer says).
    secondaryExtJwt: (tokens, p) =>
      extJwtMethod.checkSecondary(tokens, p.requireExtJwtSigner!, {
        id: p.identityId,
        externalId: p.externalId ?? null,
      }),
  };
  // Built here: the account page signs in through the OIDC part (ADR 0014).
  const apiSessionEnding = createApiSessionEnding({
    knex: database.knex,
    revocations: services.revocations,
    endGrantRows: oidc.sessions.endGrantRowsOf,
    audit: services.audit,
  });
  const accountSessions = createAccountSessionService({
    knex: database.knex,
    box,
    tokens: oidc.accountTokens,
    verifyAccessToken: (token, connection) => oidc.verifier.bearer.verify([token], connection),
    endApiSession: (identityId, apiSessionId) => apiSessionEnding.endOwnSession(identityId, apiSessionId),
  });
  return {
    sessions: services.sessions,
    apiSessionView: services.apiSessionView,
    passwordMethod: services.passwordMethod,
    passkeyMethod: createPasskeyMethod({
      knex: database.knex,
      passkeys: services.passkeys,
      // Failed passwordless assertions per client address, on the rate limits' store.
      failures: createRateLimiter(
        {
          enabled: config.rateLimits.enabled,
          perSecond: PASSKEY_FAILURES_PER_WINDOW / PASSKEY_FAILURE_WINDOW_SECONDS,
          burst: PASSKEY_FAILURES_PER_WINDOW,
        },
        { name: 'passkey-failures', shared },
      ),
    }),
    passkeyFactor: services.passkeyFactor,
    principals,
    totp: services.totp,
    passkeys: services.passkeys,
    webauthn: services.webauthn,
    identities: services.identities,
    enrollments: services.enrollments,
    authenticators: services.authenticators,
    enroll: services.enroll,
    policies: services.policies,
    signers: services.signers,
    cas: services.cas,
    certificateBlocks: services.certificateBlocks,
    certMethod: services.certMethod,
    extJwtMethod,
    loginLimiter: createRateLimiter(config.rateLimits, { name: 'login', shared }),
    authorizationLimiter: createRateLimiter(
      {
        enabled: config.rateLimits.enabled,
        perSecond: config.rateLimits.authorizationPerSecond,
        burst: config.rateLimits.authorizationBurst,
      },
      { name: 'authorization', shared },
    ),
    introspectionLimiter: createRateLimiter(
      {
        enabled: config.rateLimits.enabled,
        perSecond: config.rateLimits.introspectionPerSecond,
        burst: config.rateLimits.introspectionBurst,
      },
      { name: 'introspection', shared },
    ),
    userCodeThrottle,
    oidc,
    audit: services.audit,
    // Built here: an OIDC session's grant rows are the OIDC part's to end.
    apiSessionEnding,
    accountSessions,
    webhooks: services.webhooks,
    webhookDeliveries: services.webhookDeliveries,
    auditEvents: createAuditEventQuery({ knex: database.knex }),
    versionReport: createVersionReport({ database }),
  };
}

/**
 * Builds the controller from the top, each part once: the domain services, then (with an `edge`
 * section) the OIDC provider and its login steps, then the route dependencies and the edge
 * routers. Two built parts are amended afterwards: `createOidc` pushes a hook onto
 * `revocations.hooks`, so that revoking or deleting an identity also deletes its OIDC rows in the
 * same transaction, and gives the session limit the way an evicted OIDC session ends with its
 * grant. Only `app.ts` imports this; nothing below it imports back up.
 */
export async function compose(deps: ComposeDeps) {
  const { knex } = deps.database;
  const services = await createDomainServices(deps);
  const oidcPart = deps.config.edge ? await createOidcPart(deps, services) : undefined;
  const routers = oidcPart ? edgeRoutersOf(createRouteDeps(deps, services, oidcPart)) : undefined;
  const stopWebhooks = startWebhooks(deps, services.audit);
  const stopJanitor = startJanitor(
    knex,
    deps.logger,
    instanceLockFor(deps.database, 'janitor'),
    deps.config.audit.retention,
  );

  return {
    /** Security events: logged one line each, and observable in-process (metrics). */
    audit: services.audit,
    sessions: services.sessions,
    revocations: services.revocations,
    totp: services.totp,
    /** Passkeys (WebAuthn) and the site their ceremonies run for. */
    passkeys: services.passkeys,
    webauthn: services.webauthn,
    extJwtMethod: services.extJwtMethod,
    /** The OIDC provider; absent without an `edge` section. */
    oidc: oidcPart?.oidc,
    /** The edge API routers; absent without an `edge` section. */
    routers,
    async stop() {
      // Every part is waited for, also when one fails: the pool closes next.
      const stopped = await Promise.allSettled([
        stopJanitor(),
        stopWebhooks(),
        oidcPart?.oidc.stop(),
        services.revocationState.stop(),
      ]);
      const failed = stopped.find((s) => s.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}

function edgeRoutersOf(deps: RouteDeps): EdgeRouters {
  return { ...edgeRouters(deps), account: accountRoutes(deps), oidc: oidcMiddleware(deps) };
}

export type Services = Awaited<ReturnType<typeof compose>>;
