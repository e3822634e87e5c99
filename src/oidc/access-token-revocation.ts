import type { Socket } from 'node:net';
import type { OidcSessions } from './oidc-sessions.js';
import { heldOver, type TokenVerifier } from './token-verifier.js';

export interface AccessTokenRevocationDeps {
  verifier: Pick<TokenVerifier, 'revocableAccessToken'>;
  sessions: Pick<OidcSessions, 'endApiSession'>;
}

/**
 * RFC 7009 for our JWT access tokens, which are stored nowhere and so cannot be revoked one by
 * one: revoking one ends its whole API session (`z_asid`), refresh token included, as
 * `DELETE current-api-session` does with it. The token must be ours and issued to the client that
 * authenticated at the endpoint (§2.1), and a certificate-bound one (RFC 8705 §3) must come over a
 * connection presenting its certificate: a copy of it alone ends nothing of the device's. Anything
 * else is left alone, and the endpoint answers 200 all the same (§2.2).
 */
export function createAccessTokenRevocation({ verifier, sessions }: AccessTokenRevocationDeps) {
  return async function revokeAccessToken(
    token: string,
    clientId: string | undefined,
    connection: Socket | undefined,
  ): Promise<void> {
    const claims = await verifier.revocableAccessToken(token);
    if (!claims || clientId === undefined || claims.client_id !== clientId) return;
    if (!heldOver(claims, connection)) return;
    await sessions.endApiSession(claims.z_asid, 'revoked');
  };
}

export type AccessTokenRevocation = ReturnType<typeof createAccessTokenRevocation>;
