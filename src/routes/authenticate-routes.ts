import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import { sendData, sendEmpty } from '../errors/envelope.js';
import { authenticate, principalOf } from '../middleware/authenticate.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import { clientAddress } from '../middleware/request-context.js';
import { loginExtrasSchema } from '../schemas/authenticate-schemas.js';
import { mfaCodeSchema } from '../schemas/mfa-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import type { ApiSessionView, AuthQueryView, CurrentApiSessionView } from '../schemas/session-views.js';
import { secondFactorRequirement, type AuthPolicy } from '../services/mfa/second-factor-requirement.js';
import type { PrimaryAuthResult } from '../services/auth/primary-result.js';
import type { RouteDeps } from './route-deps.js';
import { completeSessionMfa } from './mfa-routes.js';
import { legacyPasskeyRoutes, passkeyPaidMfa } from './legacy-passkey-routes.js';
import { primaryLoginsFor } from './primary-logins.js';

/**
 * The TOTP query of a legacy session, in the form OpenZiti clients read. `httpUrl` is relative to the
 * authenticate URL, so `authenticate/mfa` is served by the client and the management API alike.
 */
export const LEGACY_MFA_QUERY = {
  typeId: 'MFA',
  format: 'numeric',
  httpMethod: 'POST',
  httpUrl: './authenticate/mfa',
  minLength: 6,
  maxLength: 6,
  provider: 'svc',
} as const satisfies AuthQueryView;

/** Where a legacy session pays its MFA step with a passkey (an extension beyond the specification). */
const LEGACY_PASSKEY_MEMBER = {
  httpMethod: 'POST',
  httpUrl: './authenticate/mfa',
  optionsHttpMethod: 'POST',
  optionsHttpUrl: './authenticate/mfa/passkey/options',
} as const;

/**
 * The MFA query of a new legacy session, if it owes one (secondFactorRequirement): a passkey when
 * the policy requires one, else TOTP, with the `passkey` member when the identity has a passkey
 * (without one the query is exactly the specification's).
 */
async function legacyMfaQuery(
  deps: RouteDeps,
  identityId: string,
  policy: AuthPolicy,
): Promise<AuthQueryView | undefined> {
  const need = await secondFactorRequirement(deps, identityId, policy);
  switch (need.kind) {
    case 'none':
      return undefined;
    case 'passkey': {
      const { httpMethod, httpUrl } = LEGACY_PASSKEY_MEMBER;
      return {
        typeId: 'MFA',
        provider: 'svc',
        httpMethod,
        httpUrl,
        passkey: LEGACY_PASSKEY_MEMBER,
        isPasskeyRegistered: need.registered,
      };
    }
    case 'totp':
      return need.hasPasskey ? { ...LEGACY_MFA_QUERY, passkey: LEGACY_PASSKEY_MEMBER } : LEGACY_MFA_QUERY;
  }
}

/** A passwordless passkey with user verification is two factors: such a session owes no MFA step. */
const isTwoFactor = (result: PrimaryAuthResult) => result.amr.includes('mfa');

/**
 * Legacy session login: `POST /authenticate?method=password|cert|ext-jwt|passkey`, and
 * `POST /authenticate/mfa` for the TOTP (or passkey) step it may leave owed.
 */
export function authenticateRoutes(router: Router, deps: RouteDeps): void {
  const primaryLogins = primaryLoginsFor(deps);
  router.post('/authenticate', parseBody(), async (ctx: Context) => {
    const method = String(ctx.query.method ?? '');
    const primary = Object.hasOwn(primaryLogins, method) ? primaryLogins[method] : undefined;
    if (!primary) {
      throw new AppError('COULD_NOT_VALIDATE', {
        cause: { field: 'method', reason: `must be one of ${Object.keys(primaryLogins).join(', ')}` },
      });
    }
    const input = parseInput(loginExtrasSchema, bodyOf(ctx));
    const result = await primary(ctx);
    const mfaQuery = isTwoFactor(result)
      ? undefined
      : await legacyMfaQuery(deps, result.identity.id, result.policy);
    const mfaRequired = mfaQuery !== undefined;
    const { session, token } = await deps.sessions.open(
      {
        identityId: result.identity.id,
        amr: result.amr,
        configTypes: input.configTypes,
        isCertExtendable: result.isCertExtendable,
        mfaRequired,
        authMethod: method,
        ipAddress: clientAddress(ctx),
      },
      result.policy.sessions,
    );
    sendData(ctx, {
      id: session.id,
      token,
      identityId: result.identity.id,
      identity: { id: result.identity.id, name: result.identity.name },
      expiresAt: session.expiresAt.toISOString(),
      expirationSeconds: Math.floor((session.expiresAt.getTime() - Date.now()) / 1000),
      isMfaRequired: mfaRequired,
      isMfaComplete: false,
      authQueries: mfaQuery ? [mfaQuery] : [],
    } satisfies ApiSessionView);
  });

  legacyPasskeyRoutes(router, deps);

  router.post(
    '/authenticate/mfa',
    authenticate(deps.principals, { allowMfaPending: true }),
    parseBody(),
    async (ctx: Context) => {
      const principal = principalOf(ctx);
      // `{passkey}` beside the specification's `{code}`: an assertion of one of the identity's passkeys.
      if (await passkeyPaidMfa(ctx, deps, principal)) return sendEmpty(ctx);
      const { code } = parseInput(mfaCodeSchema, bodyOf(ctx));
      if (await deps.passkeyFactor.requiredFor(principal.identityId)) {
        throw new AppError('MFA_INVALID_TOKEN', {
          message: "this identity's policy requires a passkey; a TOTP code does not satisfy it",
        });
      }
      await deps.totp.verifyLoginCode(principal.identityId, code, { invalidCode: 'MFA_INVALID_TOKEN' });
      await completeSessionMfa(deps, principal);
      sendEmpty(ctx);
    },
  );
}

/** `GET /current-identity`: the caller's identity detail. */
export function currentIdentityRoutes(router: Router, deps: RouteDeps): void {
  router.get('/current-identity', authenticate(deps.principals), async (ctx: Context) => {
    sendData(ctx, await deps.identities.current(principalOf(ctx).identityId));
  });
}

/** `GET|DELETE /current-api-session` (client API). */
export function currentSessionRoutes(router: Router, deps: RouteDeps): void {
  router.get(
    '/current-api-session',
    authenticate(deps.principals, { allowMfaPending: true }),
    (ctx: Context) => {
      const p = principalOf(ctx);
      sendData(ctx, {
        id: p.sessionId,
        identityId: p.identityId,
        identity: { id: p.identityId, name: p.identityName },
        isAdmin: p.isAdmin,
        authMethod: p.kind === 'oidc' ? 'oidc' : p.amr[0],
        amr: p.amr,
        configTypes: p.configTypes,
        isCertExtendable: p.isCertExtendable,
        isMfaRequired: p.mfaRequired,
        isMfaComplete: p.mfaComplete,
        expiresAt: p.expiresAt.toISOString(),
        expirationSeconds: Math.max(0, Math.floor((p.expiresAt.getTime() - Date.now()) / 1000)),
      } satisfies CurrentApiSessionView);
    },
  );
  router.delete(
    '/current-api-session',
    authenticate(deps.principals, { allowMfaPending: true }),
    async (ctx: Context) => {
      const principal = principalOf(ctx);
      // A bearer token's API session also ends its grant and is revoked on every instance.
      if (principal.kind === 'oidc') await deps.oidc.sessions.endApiSession(principal.sessionId);
      else await deps.sessions.end(principal.sessionId);
      sendEmpty(ctx);
    },
  );
}
