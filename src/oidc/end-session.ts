import { validationError } from '../errors/app-error.js';
import { CLIENT_ID } from './create-provider.js';
import type { IssuerEntry } from './issuer-registry.js';
import type { OidcSessions } from './oidc-sessions.js';
import type { TokenVerifier } from './token-verifier.js';

export interface EndSessionParams {
  id_token_hint?: string;
  post_logout_redirect_uri?: string;
  state?: string;
  client_id?: string;
}

export interface EndSessionDeps {
  verifier: TokenVerifier;
  sessions: OidcSessions;
}

/**
 * Our `/oidc/end_session` (docs/adr/0003-own-userinfo-and-end-session.md): the API session named
 * by the `id_token_hint` ends — its access and refresh tokens stop working — and the caller is
 * sent to the post-logout URI only when our matcher allows it.
 */
export function createEndSession({ verifier, sessions }: EndSessionDeps) {
  return async function endSession(
    entry: IssuerEntry,
    params: EndSessionParams,
  ): Promise<{ redirectTo?: string; ended: boolean }> {
    let ended = false;
    if (params.id_token_hint !== undefined) {
      const hint = await verifier.verifyIdTokenHint(params.id_token_hint);
      if (!hint) throw validationError('id_token_hint', 'must be an ID token issued by this service');
      await sessions.endApiSession(hint.apiSessionId);
      ended = true;
    }
    const uri = params.post_logout_redirect_uri;
    const clientKnown = ended || params.client_id === CLIENT_ID;
    if (uri === undefined || !clientKnown || !entry.postLogoutUriAllowed(uri)) return { ended };
    const target = new URL(uri);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    return { redirectTo: target.toString(), ended };
  };
}

export type EndSession = ReturnType<typeof createEndSession>;
