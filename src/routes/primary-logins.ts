import type { Context } from 'koa';
import { isAppError } from '../errors/app-error.js';
import { bearerTokens } from '../services/auth/bearer-tokens.js';
import { bodyOf } from '../middleware/parse-body.js';
import { clientAddress } from '../middleware/request-context.js';
import { peerCertificateChain } from '../listeners/peer-certificates.js';
import { passwordLoginSchema } from '../schemas/authenticate-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import type { AuditTrail } from '../services/audit-trail.js';
import { refusalOf, type PrimaryAuthResult } from '../services/auth/primary-result.js';
import type { RouteDeps } from './route-deps.js';

export type PrimaryLogin = (ctx: Context) => Promise<PrimaryAuthResult>;

/**
 * One `auth.login` event per decision of a method: success, or the refusal (INVALID_AUTH) with
 * its reason; a refusal that locked the identity is a `lockout`. A malformed request is no
 * decision and is not recorded.
 */
function audited(audit: AuditTrail, method: string, login: PrimaryLogin): PrimaryLogin {
  return async (ctx) => {
    let result: PrimaryAuthResult;
    try {
      result = await login(ctx);
    } catch (err) {
      if (isAppError(err) && err.code === 'INVALID_AUTH') {
        const { reason, identityId, lockout } = refusalOf(err);
        audit.record({
          event: 'auth.login',
          method,
          outcome: lockout ? 'lockout' : 'failure',
          reason,
          identityId,
        });
      }
      throw err;
    }
    audit.record({ event: 'auth.login', method, outcome: 'success', identityId: result.identity.id });
    return result;
  };
}

/**
 * Primary login methods by `method` name: each reads its credential from the request
 * (body, TLS socket, Authorization header) and calls its method module. Shared by the legacy
 * `authenticate` endpoints and the OIDC login endpoints, so each login is audited once.
 */
export function primaryLoginsFor(deps: RouteDeps): Record<string, PrimaryLogin> {
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
  };
}
