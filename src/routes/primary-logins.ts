import type { Context } from 'koa';
import { bearerTokens } from '../services/auth/bearer-tokens.js';
import { bodyOf } from '../middleware/parse-body.js';
import { peerCertificateChain } from '../listeners/peer-certificates.js';
import { passwordLoginSchema } from '../schemas/authenticate-schemas.js';
import { parseInput } from '../schemas/parse-input.js';
import type { PrimaryAuthResult } from '../services/auth/primary-result.js';
import type { RouteDeps } from './route-deps.js';

export type PrimaryLogin = (ctx: Context) => Promise<PrimaryAuthResult>;

/**
 * Primary login methods by `method` name: each reads its credential from the request
 * (body, TLS socket, Authorization header) and calls its method module. Shared by the legacy
 * `authenticate` endpoints and the OIDC login endpoints.
 */
export function primaryLoginsFor(deps: RouteDeps): Record<string, PrimaryLogin> {
  return {
    password: async (ctx) => {
      const input = parseInput(passwordLoginSchema, bodyOf(ctx));
      // ctx.ip is the TCP peer, or the client a trusted PROXY protocol header named
      // (src/listeners/proxy-listener.ts); neither app trusts HTTP proxy headers.
      return deps.passwordMethod({ ...input, clientAddress: ctx.ip });
    },
    // The certificate comes from the TLS handshake; the body carries nothing.
    cert: (ctx) => deps.certMethod(peerCertificateChain(ctx)),
    'ext-jwt': (ctx) => deps.extJwtMethod.authenticatePrimary(bearerTokens(ctx.get('authorization'))),
  };
}
