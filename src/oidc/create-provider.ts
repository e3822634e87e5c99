import type { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import Provider, {
  errors,
  interactionPolicy,
  type AdapterConstructor,
  type ClientMetadata,
  type Configuration,
  type KoaContextWithOIDC,
} from 'oidc-provider';
import type { JWK } from 'jose';
import { isDatabaseUnavailable } from '../db/db-errors.js';
import type { AccountPolicy } from './account-policy.js';
import {
  CODE_FORM_COOKIE_PATH,
  CODE_FORM_SESSION_SECONDS,
  CODE_VERIFICATION_ROUTE,
  DEVICE_CODE_SECONDS,
  deviceAuthorizationResponse,
  deviceFlowFeature,
  type DeviceFlowDeps,
} from './device-flow.js';
import { bindDeviceLogin } from './device-login-binding.js';
import { CODE_SECONDS } from './login-lifetime.js';
import { LOGIN_PATH_BY_HINT, LOGIN_PATHS, loginEndpointsOf } from './login-paths.js';

export const CLIENT_ID = 'svc';
/** Our token introspection (RFC 7662) under the issuer, where oidc-provider would serve its own. */
export const INTROSPECTION_ROUTE = '/token/introspection';
/**
 * The one resource server: our Edge APIs (oidc-provider issues JWT access tokens only for a resource
 * indicator with an audience).
 */
export const API_RESOURCE = 'urn:svc:edge';
export const ACCESS_TOKEN_AUDIENCE = 'svc';
// Registered so the client metadata validates; it matches nothing: every check runs through our matcher.
const PLACEHOLDER_URI = 'https://redirect-uri-placeholder.invalid/never';

export interface OidcDurations {
  accessTokenDuration: number;
  idTokenDuration: number;
  refreshTokenDuration: number;
  maxSessionDuration: number;
}

export interface ProviderOptions {
  issuer: string;
  Adapter: AdapterConstructor;
  privateJwks: JWK[];
  cookieKeys: string[];
  durations: OidcDurations;
  redirectUriAllowed: (uri: string) => boolean;
  postLogoutUriAllowed: (uri: string) => boolean;
  corsOriginAllowed: (origin: string) => boolean;
  accounts: AccountPolicy;
  logger: Logger;
  onGrant?: GrantObserver;
  /**
   * Revokes one of our JWT access tokens presented at the revocation endpoint (RFC 7009), for the
   * client that authenticated there; a token that is no such thing is left alone.
   */
  revokeAccessToken?: (
    token: string,
    clientId: string | undefined,
    connection: Socket | undefined,
  ) => Promise<void>;
  /** The device authorization grant's pages, user-code throttle and audit (RFC 8628). */
  device: DeviceFlowDeps;
}

/** Told each token endpoint outcome: the requested grant type, and whether tokens were issued. */
export type GrantObserver = (grantType: unknown, succeeded: boolean) => void;

function hasClientCertificate(ctx: KoaContextWithOIDC): boolean {
  const socket = ctx.req.socket as Partial<TLSSocket>;
  const cert = socket.getPeerCertificate?.();
  return cert !== undefined && cert !== null && Object.keys(cert).length > 0;
}

/**
 * The login page: the `method` hint, else `cert` when a client certificate was presented, else `username`.
 */
function loginUrl(ctx: KoaContextWithOIDC, uid: string): string {
  const hint = ctx.oidc.params?.method;
  const path =
    (typeof hint === 'string' && Object.hasOwn(LOGIN_PATH_BY_HINT, hint) && LOGIN_PATH_BY_HINT[hint]) ||
    (hasClientCertificate(ctx) ? LOGIN_PATHS.cert : LOGIN_PATHS.username);
  return `${path}?authRequestID=${encodeURIComponent(uid)}`;
}

/**
 * A device authorization's interaction belongs to the browser that confirmed the code: the
 * response that starts it sets that browser's cookie for the login (device-login-binding.ts).
 */
function bindToConfirmingBrowser(
  ctx: KoaContextWithOIDC,
  interaction: { uid: string; deviceCode?: unknown },
  cookieKey: string,
): void {
  const userCode = (ctx.oidc.deviceCode as { userCode?: unknown } | undefined)?.userCode;
  if (interaction.deviceCode === undefined || typeof userCode !== 'string') return;
  bindDeviceLogin(ctx.cookies, cookieKey, { uid: interaction.uid, userCode, seconds: DEVICE_CODE_SECONDS });
}

function policy() {
  const { Check, base } = interactionPolicy;
  const prompts = base();
  // Every authorization request is its own login with its own API session (z_asid), also when the
  // browser still carries a provider session cookie.
  prompts
    .get('login')!
    .checks.add(
      new Check(
        'svc_login_required',
        'every authorization request authenticates',
        (ctx) => !ctx.oidc.result?.login,
      ),
    );
  prompts.get('consent')!.checks.remove('native_client_prompt');
  return prompts;
}

/**
 * Every authorization request of ours is an OpenID Connect one (OIDC Core §3.1.2.1: `scope` MUST
 * contain `openid`); without it the provider would run a plain OAuth flow with no ID token. Run
 * as an extra-parameter validator because the provider calls those after the redirect URI check:
 * the error then goes back to the client as `invalid_scope` with `state` and `iss` (RFC 9207),
 * or is answered 400 when the redirect URI is not allowed.
 */
async function requireOpenidScope(ctx: KoaContextWithOIDC): Promise<void> {
  const scope = ctx.oidc.params?.scope;
  if (typeof scope !== 'string' || !scope.split(' ').includes('openid')) {
    throw new errors.InvalidScope('scope must contain openid', 'openid');
  }
}

function ttls(d: OidcDurations): Configuration['ttl'] {
  return {
    DeviceCode: DEVICE_CODE_SECONDS,
    AccessToken: d.accessTokenDuration,
    IdToken: d.idTokenDuration,
    // Each new refresh token lives refreshTokenDuration from its issue, never past its grant (the chain cap).
    RefreshToken: (ctx) => {
      const grantExp = ctx?.oidc?.entities.Grant?.exp;
      const left = grantExp ? grantExp - Math.floor(Date.now() / 1000) : Infinity;
      return Math.max(1, Math.min(d.refreshTokenDuration, left));
    },
    AuthorizationCode: CODE_SECONDS,
    Interaction: 600,
    // The cap of the refresh chain. The adapter ends a grant's row earlier (login-lifetime.ts).
    Grant: d.maxSessionDuration,
    // Stored only behind the device code form, for its XSRF secret (the adapter's upsert); elsewhere
    // never stored, so never longer than the request that made it.
    Session: (ctx) =>
      ctx?.oidc?.route === CODE_VERIFICATION_ROUTE ? CODE_FORM_SESSION_SECONDS : d.maxSessionDuration,
  };
}

/** The first-party public client `svc`; our matcher decides every redirect URI. */
const svcClient = (): ClientMetadata => ({
  client_id: CLIENT_ID,
  application_type: 'web',
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
  response_types: ['code'],
  redirect_uris: [PLACEHOLDER_URI],
  post_logout_redirect_uris: [PLACEHOLDER_URI],
});

const ROUTES = {
  authorization: '/authorization',
  token: '/token',
  jwks: '/keys',
  userinfo: '/userinfo',
  end_session: '/end_session',
  revocation: '/revoke',
  device_authorization: '/device/auth',
  code_verification: '/device',
};

/** `amr`, `auth_time` and our claims in every ID token; the defaults (`acr`, `sid`, …) kept. */
const CLAIMS = {
  acr: null,
  sid: null,
  auth_time: null,
  iss: null,
  openid: ['sub', 'name', 'auth_time', 'amr', 'z_ia', 'z_asid'],
};

/** JWT access tokens for our one resource server, audience `svc`. */
const resourceIndicators = (d: OidcDurations) => ({
  enabled: true,
  defaultResource: () => API_RESOURCE,
  useGrantedResource: () => true,
  getResourceServerInfo: (_ctx: unknown, indicator: string) => {
    if (indicator !== API_RESOURCE) throw new errors.InvalidTarget();
    return {
      scope: 'openid offline_access',
      audience: ACCESS_TOKEN_AUDIENCE,
      accessTokenTTL: d.accessTokenDuration,
      accessTokenFormat: 'jwt' as const,
      jwt: { sign: { alg: 'RS256' as const } },
    };
  },
});

const features = (
  d: OidcDurations,
  accounts: AccountPolicy,
  device: DeviceFlowDeps,
): Configuration['features'] => ({
  devInteractions: { enabled: false },
  deviceFlow: deviceFlowFeature(device),
  dPoP: { enabled: false },
  pushedAuthorizationRequests: { enabled: false },
  // One public client: it may revoke only its own tokens (RFC 7009 §2.1), and those of a grant
  // bound to a certificate only over a connection presenting it.
  revocation: { enabled: true, allowedPolicy: accounts.revocationAllowed },
  // Kept on for discovery; our own routes serve both (docs/adr/0003-own-userinfo-and-end-session.md).
  userinfo: { enabled: true },
  rpInitiatedLogout: { enabled: true },
  resourceIndicators: resourceIndicators(d),
});

/** oidc-provider's configuration for one issuer. */
function configuration(o: ProviderOptions): Configuration {
  return {
    adapter: o.Adapter,
    jwks: { keys: o.privateJwks },
    // The provider's session cookie is read only by the device code form (ADR 0005's amendment).
    cookies: { keys: o.cookieKeys, long: { path: CODE_FORM_COOKIE_PATH } },
    clients: [svcClient()],
    allowOmittingSingleRegisteredRedirectUri: false,
    clientBasedCORS: (_ctx, origin) => o.corsOriginAllowed(origin),
    // The provider runs every extraParams validator on every authorization request, whether its
    // parameter is present or not: the openid check hangs on `method` only to be run at all.
    extraParams: { method: requireOpenidScope, svc_ct: null },
    responseTypes: ['code'],
    scopes: ['openid', 'offline_access'],
    claims: CLAIMS,
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    routes: ROUTES,
    features: features(o.durations, o.accounts, o.device),
    interactions: {
      policy: policy(),
      url: (ctx, interaction) => {
        bindToConfirmingBrowser(ctx, interaction, o.cookieKeys[0]!);
        return loginUrl(ctx, interaction.uid);
      },
    },
    rotateRefreshToken: true,
    // Codes and tokens are not bound to the provider's Session, which is stored only behind the
    // device code form (the adapter): the provider's default binds those of a login without
    // offline_access to it, and their exchange would fail.
    expiresWithSession: () => false,
    ttl: ttls(o.durations),
    findAccount: o.accounts.findAccount,
    extraTokenClaims: o.accounts.extraTokenClaims as Configuration['extraTokenClaims'],
    loadExistingGrant: o.accounts.loadExistingGrant,
    // OAuth errors stay RFC 6749 JSON, also where the provider would render a page.
    renderError: (ctx, out) => {
      ctx.type = 'json';
      ctx.body = { error: out.error, error_description: out.error_description };
    },
    // Our own route, not the provider's introspection feature (src/oidc/token-introspection.ts).
    discovery: {
      introspection_endpoint: `${o.issuer}${INTROSPECTION_ROUTE}`,
      // Certificate logins yield certificate-bound tokens (RFC 8705 §3.3), by our own binding
      // (account-policy.ts), not the provider's per-client mTLS feature.
      tls_client_certificate_bound_access_tokens: true,
      svc_login_endpoints: loginEndpointsOf(o.issuer),
    },
  };
}

/**
 * The database is down, restarting or too slow: a retry may succeed (RFC 6749 §4.1.2.1 names this
 * error), so the client gets 503 with Retry-After instead of a 500 `server_error`.
 */
function answerUnavailable(ctx: KoaContextWithOIDC): void {
  ctx.status = 503;
  ctx.set('retry-after', '1');
  ctx.type = 'json';
  ctx.body = {
    error: 'temporarily_unavailable',
    error_description: 'the database is unavailable or too slow; retry later',
  };
}

/**
 * The provider's revocation endpoint refuses every JWT (`unsupported_token_type`), since it keeps
 * no record of structured tokens. After the provider has parsed the request and authenticated the
 * client, that answer is replaced: a JWT access token of ours is revoked (its API session ends;
 * a certificate-bound one only over a connection presenting its certificate), and any JWT, ours or not, valid or not, gets the 200 of RFC 7009 §2.2, as an unknown opaque
 * token does. Every other answer of the endpoint (a refresh token revoked, a client refused) stays
 * the provider's.
 */
function structuredTokenRevocation(
  revoke: NonNullable<ProviderOptions['revokeAccessToken']>,
  logger: Logger,
) {
  return async function revokeStructuredToken(ctx: KoaContextWithOIDC, next: () => Promise<void>) {
    await next();
    // The provider defines `ctx.oidc` on the contexts of its routes only.
    if (!Object.hasOwn(ctx, 'oidc') || ctx.oidc.route !== 'revocation' || ctx.status !== 400) return;
    if ((ctx.body as { error?: unknown } | undefined)?.error !== 'unsupported_token_type') return;
    const token = ctx.oidc.params?.token;
    try {
      if (typeof token === 'string') await revoke(token, ctx.oidc.client?.clientId, ctx.req.socket);
    } catch (err) {
      if (isDatabaseUnavailable(err)) return answerUnavailable(ctx);
      logger.error({ err }, 'access token revocation failed');
      ctx.status = 500;
      ctx.type = 'json';
      ctx.body = { error: 'server_error', error_description: 'oops! something went wrong' };
      return;
    }
    // As the provider answers a revoked opaque token: 200 with an empty text body.
    ctx.status = 200;
    ctx.remove('content-type');
    ctx.body = '';
  };
}

/** One Provider for one issuer `https://<address>/oidc`; our matcher decides every redirect URI. */
export function createProvider(o: ProviderOptions): Provider {
  const provider = new Provider(o.issuer, configuration(o));
  // Nothing is trusted from X-Forwarded-* headers: we terminate TLS ourselves, and any client could
  // send them to change the host, protocol or address the provider sees (the issuer is picked by
  // listener and Host, ADR 0007).
  provider.proxy = false;
  const client = provider.Client.prototype as unknown as {
    redirectUriAllowed(uri: string): boolean;
    postLogoutRedirectUriAllowed(uri: string): boolean;
  };
  client.redirectUriAllowed = (uri) => o.redirectUriAllowed(uri);
  client.postLogoutRedirectUriAllowed = (uri) => o.postLogoutUriAllowed(uri);
  provider.on('server_error', (ctx: KoaContextWithOIDC, err: unknown) => {
    if (!isDatabaseUnavailable(err)) return o.logger.error({ err }, 'oidc-provider error');
    // The provider emits this event after writing its answer and before sending it.
    o.logger.warn({ err: (err as Error).message }, 'database unavailable');
    answerUnavailable(ctx);
  });
  if (o.revokeAccessToken) provider.use(structuredTokenRevocation(o.revokeAccessToken, o.logger));
  provider.use(deviceAuthorizationResponse(o.device.audit));
  // A poll of an expired device code (RFC 8628 §3.5 `expired_token`): the device gave up waiting.
  provider.on('grant.error', (_ctx: KoaContextWithOIDC, err: { error?: unknown }) => {
    if (err?.error !== 'expired_token') return;
    // An event listener: the provider does not wait for it, so a failed store is only logged.
    o.device.audit
      .storeAlone({ event: 'oidc.device.expired' })
      .catch((e: unknown) => o.logger.warn({ err: (e as Error).message }, 'audit event not stored'));
  });
  // The provider is a Koa app of its own: without an 'error' listener Koa writes the errors that
  // reach it (a client's connection reset while its answer is written, a malformed pipelined
  // request) to stderr, outside the structured log and unbounded. Server errors come through
  // `server_error` above; these are the client's doing.
  (provider as unknown as EventEmitter).on('error', (err: Error & { code?: string }) =>
    o.logger.debug({ err: err.message, code: err.code }, 'oidc-provider connection error'),
  );
  const { onGrant } = o;
  if (onGrant) {
    const grantTypeOf = (ctx: KoaContextWithOIDC) =>
      (ctx.oidc?.params as { grant_type?: unknown } | undefined)?.grant_type;
    provider.on('grant.success', (ctx: KoaContextWithOIDC) => onGrant(grantTypeOf(ctx), true));
    provider.on('grant.error', (ctx: KoaContextWithOIDC) => onGrant(grantTypeOf(ctx), false));
  }
  return provider;
}
