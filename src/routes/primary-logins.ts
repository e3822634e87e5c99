import type { Context } from 'koa';
import { isAppError } from '../errors/app-error.js';
import { bearerTokens } from '../services/auth/bearer-tokens.js';
import { bodyOf } from '../middleware/parse-body.js';
import { clientAddress } from '../middleware/request-context.js';
import { peerCertificateChain } from '../listeners/peer-certificates.js';
import { passwordLoginSchema } from '../schemas/authenticate-schemas.js';
import { passkeyLoginSchema } from '../schemas/passkey-login-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import type { AuditTrail } from '../services/audit-trail.js';
import { refusalOf, type PrimaryAuthResult } from '../services/auth/primary-result.js';
import type { RouteDeps } from './route-deps.js';

export type PrimaryLogin = (ctx: Context) => Promise<PrimaryAuthResult>;

/**
 * One `auth.login` event per decision of a method: success, or the refusal (INVALID_AUTH) with
 * its reason; a refusal that locked the identity, or an attempt refused by a failure limit before
 * any check (RATE_LIMITED), is a `lockout`. A malformed request is no decision and is not recorded.
 * A success is stored with the write the login makes on this request (its API session, its grant,
 * or its auth request's progress: services/audit-trail.ts `hold`); a refusal is counted in its row
 * of the minute (`storeAttempt`); one whose username names no identity shares its address's row,
 * and the username it typed is stored nowhere (people type passwords into that field).
 */
function audited<A extends unknown[]>(
  audit: AuditTrail,
  method: string,
  login: (ctx: Context, ...args: A) => Promise<PrimaryAuthResult>,
): (ctx: Context, ...args: A) => Promise<PrimaryAuthResult> {
  return async (ctx, ...args) => {
    let result: PrimaryAuthResult;
    try {
      result = await login(ctx, ...args);
    } catch (err) {
      if (isAppError(err) && (err.code === 'INVALID_AUTH' || err.code === 'RATE_LIMITED')) {
        const { reason, identityId, lockout, audited: stored } = refusalOf(err);
        if (stored) throw err;
        await audit.storeAttempt({
          event: 'auth.login',
          method,
          outcome: lockout || err.code === 'RATE_LIMITED' ? 'lockout' : 'failure',
          reason,
          identityId,
        });
      }
      throw err;
    }
    await audit.hold({ event: 'auth.login', method, outcome: 'success', identityId: result.identity.id });
    return result;
  };
}

/** The WebAuthn site of a request's Host (409 PASSKEYS_UNAVAILABLE where a browser would refuse it). */
export const webauthnSiteOf = (deps: Pick<RouteDeps, 'webauthn'>) => (ctx: Context) =>
  deps.webauthn.siteFor(ctx.host);

/** Whether a browser at this request's Host can use passkeys (else the pages do not offer them). */
export const passkeysAvailableAt = (deps: Pick<RouteDeps, 'webauthn'>, ctx: Context): boolean =>
  deps.webauthn.isAvailable(ctx.host);

/** A passwordless login, its challenge bound to `boundTo`: the auth request, or a legacy ceremony id. */
export type PasskeyLogin = (ctx: Context, boundTo: string, response: unknown) => Promise<PrimaryAuthResult>;

/** The passwordless passkey login (an extension beyond the specification), audited as method `passkey`. */
export function passkeyLoginFor(deps: RouteDeps): PasskeyLogin {
  const siteOf = webauthnSiteOf(deps);
  return audited(deps.audit, 'passkey', (ctx, boundTo: string, response: unknown) =>
    deps.passkeyMethod.authenticate({
      response,
      ceremony: { boundTo },
      site: siteOf(ctx),
      clientAddress: clientAddress(ctx),
    }),
  );
}

/**
 * Primary login methods by `method` name: each reads its credential from the request
 * (body, TLS socket, Authorization header) and calls its method module. Shared by the legacy
 * `authenticate` endpoints and the OIDC login endpoints, so each login is audited once.
 */
export function primaryLoginsFor(deps: RouteDeps): Record<string, PrimaryLogin> {
  const passkey = passkeyLoginFor(deps);
  return {
    password: audited(deps.audit, 'password', async (ctx) => {
      const input = parseInput(passwordLoginSchema, bodyOf(ctx));
      return deps.passwordMethod({ ...input, clientAddress: clientAddress(ctx) });
    }),
    // The certificate comes from the TLS handshake; the body carries nothing.
    cert: audited(deps.audit, 'cert', (ctx) => deps.certMethod(peerCertificateChain(ctx))),
    'ext-jwt': audited(deps.audit, 'ext-jwt', (ctx) =>
      deps.extJwtMethod.authenticatePrimary(bearerTokens(ctx.get('authorization'))),
    ),
    // The legacy form: the challenge is bound to the ceremony id `authenticate/passkey/options`
    // returned. The OIDC login binds it to the auth request instead (oidc-login-routes.ts).
    passkey: (ctx) => {
      const input = parseInput(passkeyLoginSchema, bodyOf(ctx));
      return passkey(ctx, input.ceremonyId, input.passkey);
    },
  };
}
