import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Config } from '../config/load-config.js';
import type { SecretBox } from '../crypto/secret-box.js';
import type { InstanceLock } from '../db/instance-lock.js';
import type { Identity } from '../repositories/identities-repository.js';
import { createKeyService } from '../services/keys/key-service.js';
import type { AuditTrail } from '../services/audit-trail.js';
import { createKeyWatcher } from '../services/keys/key-watcher.js';
import type { RevocationService } from '../services/revocation-service.js';
import type { SessionLimitService } from '../services/session-limit.js';
import type { RevocationState } from '../services/revocation-state.js';
import type { IdentityContextCache } from '../services/identity-context.js';
import type { ExtJwtMethod } from '../services/auth/ext-jwt-method.js';
import type { WebauthnSettings } from '../services/passkeys/webauthn-settings.js';
import type { AdapterConstructor } from 'oidc-provider';
import { createAccountTokenRequests } from './account-token-requests.js';
import { createAccessTokenRevocation, type AccessTokenRevocation } from './access-token-revocation.js';
import { createAccountPolicy, type AccountPolicy } from './account-policy.js';
import { loadCookieKeys } from './cookie-keys.js';
import { createProvider, type GrantObserver, type OidcDurations } from './create-provider.js';
import type { DevicePages, UserCodeGuesses } from './device-flow.js';
import { createEndSession } from './end-session.js';
import { createCompletedLogins } from './completed-logins.js';
import { createGrantPrefetch } from './grant-prefetch.js';
import { createIssuerRegistry, providerCallback, type IssuerSpec } from './issuer-registry.js';
import { createLoginFlow, type LoginFlowDeps } from './login-flow.js';
import { createOidcDispatch } from './oidc-dispatch.js';
import { startOidcJanitor } from './oidc-janitor.js';
import { createOidcSessions } from './oidc-sessions.js';
import { createPostgresAdapter } from './postgres-adapter.js';
import { createRefreshSecondFactor } from './refresh-second-factor.js';
import { createTokenIntrospection } from './token-introspection.js';
import { createTokenVerifier } from './token-verifier.js';
import { servesAccountPage, type ListenerSpec } from '../config/web-listeners.js';
import {
  accountCallbackUri,
  corsOriginMatcher,
  createUriMatcher,
  postLogoutPatternsFor,
  redirectPatternsFor,
} from '../config/uri-patterns.js';

export interface OidcDeps {
  config: Config;
  /** The listeners with the ports they actually bound: each edge-oidc address is one issuer. */
  listeners: readonly ListenerSpec[];
  knex: Knex;
  box: SecretBox;
  logger: Logger;
  revocations: RevocationService;
  findIdentity: (id: string) => Promise<Identity | undefined>;
  /** The identity with its policy, in one read (the login's steps). */
  findIdentityWithPolicy: LoginFlowDeps['findIdentityWithPolicy'];
  revocationState: RevocationState;
  identityContext: IdentityContextCache;
  /** The second factors and the TOTP service the login's steps check. */
  factors: LoginFlowDeps['factors'];
  /** Verifies the secondary external JWT a refresh grant must carry when the policy requires one. */
  secondaryExtJwt: Pick<ExtJwtMethod, 'checkSecondary'>;
  totp: LoginFlowDeps['totp'];
  /** Passkey ceremonies and the second-factor check of the login (an extension beyond the specification). */
  passkeys: LoginFlowDeps['passkeys'];
  passkeyFactor: LoginFlowDeps['passkeyFactor'];
  /** The WebAuthn relying party: the site of a request's Host, 409 PASSKEYS_UNAVAILABLE where a browser would refuse it. */
  webauthn: Pick<WebauthnSettings, 'siteFor'>;
  /** The policies' concurrent-session limit; this part tells it how an OIDC session ends. */
  sessionLimit: Pick<SessionLimitService, 'admit' | 'endOidcSessionsWith'>;
  audit: AuditTrail;
  /** Told each token endpoint outcome (metrics). */
  onGrant?: GrantObserver;
  /** Held by the instance that runs a clean-up pass of the provider's expired rows. */
  janitorLock: InstanceLock;
  /** The device authorization grant's pages (src/routes) and its count of wrong user codes. */
  devicePages: DevicePages;
  userCodeGuesses: UserCodeGuesses;
}

/** Every `edge-oidc` bind-point address with its URI patterns. */
function issuerSpecs(config: Config, listeners: readonly ListenerSpec[]): IssuerSpec[] {
  return listeners.flatMap((listener) => {
    if (!listener.apis.has('edge-oidc')) return [];
    const redirectUris = redirectPatternsFor(config, listener);
    const postLogoutUris = postLogoutPatternsFor(config, listener);
    const account = servesAccountPage(listener);
    return listener.addresses.map((address) => ({
      address,
      redirectUris,
      postLogoutUris,
      ...(account ? { accountCallback: accountCallbackUri(address) } : {}),
    }));
  });
}

interface RegistryDeps {
  config: Config;
  listeners: readonly ListenerSpec[];
  logger: Logger;
  Adapter: AdapterConstructor;
  cookieKeys: string[];
  durations: OidcDurations;
  accounts: AccountPolicy;
  onGrant?: GrantObserver;
  revokeAccessToken: AccessTokenRevocation;
  device: ProviderDeviceDeps;
}

type ProviderDeviceDeps = Parameters<typeof createProvider>[0]['device'];

/** One Provider per issuer, rebuilt from a key set; the URI matchers per listener. */
function buildRegistry({
  config,
  listeners,
  logger,
  Adapter,
  cookieKeys,
  durations,
  accounts,
  onGrant,
  revokeAccessToken,
  device,
}: RegistryDeps) {
  return createIssuerRegistry(issuerSpecs(config, listeners), (spec, issuer, keySet) => {
    const corsOriginAllowed = corsOriginMatcher(spec.redirectUris, config.corsOrigins);
    const configured = createUriMatcher(spec.redirectUris);
    // The account page's callback, exactly, at this issuer's own address; nothing else is widened.
    const redirectUriAllowed = (uri: string) => configured(uri) || uri === spec.accountCallback;
    const postLogoutUriAllowed = createUriMatcher(spec.postLogoutUris);
    const provider = createProvider({
      issuer,
      Adapter,
      privateJwks: keySet.privateJwks,
      cookieKeys,
      durations,
      redirectUriAllowed,
      postLogoutUriAllowed,
      corsOriginAllowed,
      accounts,
      logger,
      onGrant,
      revokeAccessToken,
      device,
    });
    return {
      address: spec.address,
      issuer,
      provider,
      callback: providerCallback(provider),
      resumeCookieName: provider.cookieName('resume'),
      sessionCookieName: provider.cookieName('session'),
      cookieKey: cookieKeys[0]!,
      redirectUriAllowed,
      postLogoutUriAllowed,
    };
  });
}

function durationsOf(config: Config): OidcDurations {
  const { accessTokenDuration, idTokenDuration, refreshTokenDuration, maxSessionDuration } =
    config.edge!.oidc;
  return { accessTokenDuration, idTokenDuration, refreshTokenDuration, maxSessionDuration };
}

/** The OIDC part (docs/architecture.md): one Provider per issuer, keys, login flow, token verification. */
export async function createOidc(deps: OidcDeps) {
  const { config, knex, box, logger } = deps;
  const durations = durationsOf(config);
  const keys = createKeyService({
    knex,
    box,
    rotationGraceSeconds: config.edge!.oidc.keyRotationGrace,
    maxTokenLifetimeSeconds: Math.max(durations.accessTokenDuration, durations.idTokenDuration),
    audit: deps.audit,
  });
  await keys.ensureKey();
  const cookieKeys = await loadCookieKeys(knex, box);

  const sessions = createOidcSessions({
    audit: deps.audit,
    knex,
    revocations: deps.revocations,
  });
  deps.revocations.hooks.push((trx, identityId) => sessions.forgetIdentity(trx, identityId));
  // An OIDC session evicted by a session limit ends as end_session ends it: with its grant's tokens.
  deps.sessionLimit.endOidcSessionsWith(sessions.endApiSessionIn);
  const prefetch = createGrantPrefetch();
  const completedLogins = createCompletedLogins();
  const refreshSecondFactor = createRefreshSecondFactor({
    extJwt: deps.secondaryExtJwt,
    prefetch,
    audit: deps.audit,
  });
  const policy = createAccountPolicy({
    findIdentity: deps.findIdentity,
    sessions,
    prefetch,
    completedLogins,
    revocations: deps.revocationState,
  });
  const accounts = { ...policy, findAccount: refreshSecondFactor.guard(policy.findAccount) };
  const Adapter = createPostgresAdapter({
    knex,
    onGrantDestroyed: (grantId) => sessions.endGrant(grantId),
    prefetch,
    completedLogins,
    accessTokenSeconds: durations.accessTokenDuration,
    audit: deps.audit,
  });
  // Asks for the issuers only when a token is verified, once the registry below exists.
  const verifier = createTokenVerifier({
    issuers: () => registry.issuers(),
    revocations: deps.revocationState,
    identities: deps.identityContext,
  });
  const registry = buildRegistry({
    config,
    listeners: deps.listeners,
    logger,
    Adapter,
    cookieKeys,
    durations,
    accounts,
    onGrant: deps.onGrant,
    revokeAccessToken: createAccessTokenRevocation({ verifier, sessions }),
    device: { pages: deps.devicePages, guesses: deps.userCodeGuesses, audit: deps.audit },
  });
  const watcher = createKeyWatcher({
    load: () => keys.loadKeySet(),
    onChange: (keySet) => {
      registry.rebuild(keySet);
      verifier.setKeys(keySet.publicJwks);
      logger.info({ signingKid: keySet.signingKid }, 'oidc providers built');
    },
    logger,
  });
  await watcher.start();
  const stopJanitor = startOidcJanitor(knex, logger, deps.janitorLock);

  return {
    registry,
    login: createLoginFlow({
      knex,
      registry,
      factors: deps.factors,
      totp: deps.totp,
      findIdentityWithPolicy: deps.findIdentityWithPolicy,
      completedLogins,
      sessionLimit: deps.sessionLimit,
      sessions,
      passkeys: deps.passkeys,
      passkeyFactor: deps.passkeyFactor,
      webauthnSiteOf: (ctx) => deps.webauthn.siteFor(ctx.host),
    }),
    verifier,
    /** Token introspection for resource servers (our `/oidc/token/introspection`). */
    introspection: createTokenIntrospection({
      knex,
      verifier,
      identities: deps.identityContext,
      revocations: deps.revocationState,
    }),
    /** A Provider exists for the current signing keys (readiness). */
    keysLoaded: (): boolean => watcher.current() !== undefined,
    sessions,
    endSession: createEndSession({ verifier, sessions }),
    /** The account page's issuer lookup and its in-process token requests (ADR 0014). */
    accountTokens: createAccountTokenRequests(registry),
    keys: {
      list: () => keys.list(),
      /** Publishes the new key in this process at once; the others within their poll interval. */
      async rotate() {
        const key = await keys.rotate();
        await watcher.refresh();
        return key;
      },
    },
    /** The `/oidc` middleware: `ours` (login, userinfo, end_session routes) first, then the provider. */
    dispatch: (ours: Middleware): Middleware => createOidcDispatch(registry, ours, refreshSecondFactor),
    async stop(): Promise<void> {
      watcher.stop();
      await stopJanitor();
    },
  };
}

export type Oidc = Awaited<ReturnType<typeof createOidc>>;
