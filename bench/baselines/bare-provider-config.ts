import {
  errors,
  interactionPolicy,
  type Configuration,
  type FindAccount,
  type KoaContextWithOIDC,
} from 'oidc-provider';
import type { JWK } from 'jose';

/**
 * oidc-provider's configuration for baselines (b) and (c) (they differ only in the adapter), the service's choices (src/oidc/create-provider.ts)
 * minus everything that is the service's own: public PKCE client `svc`, JWT access tokens for one
 * resource server through resourceIndicators, rotating refresh tokens, no consent step for the
 * first-party client, the same lifetimes and claims, JSON errors.
 */

const API_RESOURCE = 'urn:svc:edge';
const MINUTE = 60;
export const DURATIONS = {
  access: 30 * MINUTE,
  id: 30 * MINUTE,
  refresh: 24 * 60 * MINUTE,
  session: 720 * 60 * MINUTE,
};

function policy() {
  const prompts = interactionPolicy.base();
  prompts.get('consent')!.checks.remove('native_client_prompt');
  return prompts;
}

/** A fresh grant with exactly the requested scopes after each login, as the service does. */
async function loadExistingGrant(ctx: KoaContextWithOIDC) {
  const { client, session } = ctx.oidc;
  if (!ctx.oidc.result?.login || !client || !session?.accountId) return undefined;
  const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
  grant.addOIDCScope([...ctx.oidc.requestParamOIDCScopes].join(' '));
  for (const [indicator, server] of Object.entries(ctx.oidc.resourceServers ?? {})) {
    grant.addResourceScope(
      indicator,
      [...ctx.oidc.requestParamScopes].filter((s) => server.scopes.has(s)).join(' '),
    );
  }
  await grant.save();
  return grant;
}

/** The service's private claims, with constant values: the baseline has no API sessions. */
async function extraTokenClaims(_ctx: KoaContextWithOIDC, token: { kind: string; grantId?: string }) {
  if (token.kind !== 'AccessToken' || !token.grantId) return undefined;
  return {
    amr: ['pwd'],
    z_asid: token.grantId,
    z_ia: false,
    z_ct: [],
    z_t: 'a',
    z_ice: false,
    z_gen: 0,
  };
}

export function bareProviderConfiguration(o: {
  privateJwk: JWK;
  cookieKeys: string[];
  accounts: Set<string>;
  adapter: NonNullable<Configuration['adapter']>;
}): Configuration {
  const findAccount: FindAccount = async (_ctx, sub) =>
    o.accounts.has(sub) ? { accountId: sub, claims: () => ({ sub, name: sub }) } : undefined;
  return {
    adapter: o.adapter,
    jwks: { keys: [o.privateJwk] },
    cookies: { keys: o.cookieKeys },
    clients: [
      {
        client_id: 'svc',
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        // Native loopback redirect URIs match any port (RFC 8252 §7.3).
        redirect_uris: ['http://127.0.0.1/auth/callback', 'http://localhost/auth/callback'],
      },
    ],
    extraParams: ['method'],
    responseTypes: ['code'],
    scopes: ['openid', 'offline_access'],
    claims: { acr: null, sid: null, auth_time: null, iss: null, openid: ['sub', 'name', 'auth_time', 'amr'] },
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    routes: { authorization: '/authorization', token: '/token', jwks: '/keys', revocation: '/revoke' },
    features: {
      devInteractions: { enabled: false },
      dPoP: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => API_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== API_RESOURCE) throw new errors.InvalidTarget();
          return {
            scope: 'openid offline_access',
            audience: 'svc',
            accessTokenTTL: DURATIONS.access,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    interactions: {
      policy: policy(),
      url: (_ctx, interaction) => `/oidc/login/username?authRequestID=${encodeURIComponent(interaction.uid)}`,
    },
    rotateRefreshToken: true,
    // As the service: no code or token is bound to the provider's Session, which (c) does not
    // store. (The bench's logins ask for offline_access, so the library's default says the same.)
    expiresWithSession: () => false,
    ttl: {
      AccessToken: DURATIONS.access,
      IdToken: DURATIONS.id,
      RefreshToken: DURATIONS.refresh,
      AuthorizationCode: 60,
      Interaction: 600,
      Grant: DURATIONS.session,
      Session: DURATIONS.session,
    },
    findAccount,
    extraTokenClaims: extraTokenClaims as Configuration['extraTokenClaims'],
    loadExistingGrant,
    renderError: (ctx, out) => {
      ctx.type = 'json';
      ctx.body = { error: out.error, error_description: out.error_description };
    },
  };
}
