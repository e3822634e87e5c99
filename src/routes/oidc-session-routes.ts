import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import { challenges, formatOAuthBearerChallenge } from '../errors/www-authenticate.js';
import { secondaryExtJwtGate, type PrincipalResolver } from '../middleware/authenticate.js';
import { bearerTokens } from '../services/auth/bearer-tokens.js';
import { bodyOf, parseBody } from '../middleware/parse-body.js';
import type { Oidc } from '../oidc/create-oidc.js';
import type { EndSessionParams } from '../oidc/end-session.js';
import { issuerEntryOf } from '../oidc/oidc-dispatch.js';
import { renderSignedOutPage } from './oidc-login-pages.js';

const END_SESSION_PARAMS = ['id_token_hint', 'post_logout_redirect_uri', 'state', 'client_id'] as const;

/** Query or form parameters as single strings (a repeated one is refused, as OAuth does). */
function endSessionParams(source: Record<string, unknown>): EndSessionParams {
  const params: EndSessionParams = {};
  for (const name of END_SESSION_PARAMS) {
    const value = source[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') {
      throw new AppError('COULD_NOT_VALIDATE', {
        cause: { field: name, reason: 'must be given once, as a string' },
      });
    }
    params[name] = value;
  }
  return params;
}

/**
 * Our `/oidc/userinfo` and `/oidc/end_session` in front of the provider's
 * (docs/adr/0003-own-userinfo-and-end-session.md): the built-ins reject JWT access tokens and
 * need the browser's session cookie.
 */
export function oidcSessionRoutes(router: Router, oidc: Oidc, principals: PrincipalResolver): void {
  // The access token is found among the bearer tokens by its issuer; a secondary external JWT the
  // policy demands must come with it, exactly as on the Edge APIs (docs/adr/0003).
  const userinfo = async (ctx: Context) => {
    const tokens = bearerTokens(ctx.get('authorization'));
    if (tokens.length === 0)
      throw new AppError('UNAUTHORIZED', { challenges: challenges.missing().slice(1) });
    const principal = await oidc.verifier.bearer.verify(tokens, ctx.req.socket);
    await secondaryExtJwtGate(principals, tokens, principal);
    // A token refreshed down to a scope without openid belongs to no OpenID request (RFC 6750 §3.1).
    if (!principal.scopes.includes('openid')) {
      const refusal = {
        error: 'insufficient_scope',
        description: 'the access token lacks the openid scope',
      } as const;
      ctx.status = 403;
      ctx.set('WWW-Authenticate', formatOAuthBearerChallenge(refusal));
      ctx.body = { error: refusal.error, error_description: refusal.description };
      return;
    }
    ctx.body = { sub: principal.identityId, name: principal.identityName };
  };
  router.get('/oidc/userinfo', userinfo);
  router.post('/oidc/userinfo', parseBody(), userinfo);

  const endSession = async (ctx: Context, source: Record<string, unknown>) => {
    const result = await oidc.endSession(issuerEntryOf(ctx), endSessionParams(source));
    if (result.redirectTo) {
      ctx.redirect(result.redirectTo);
      ctx.status = 303;
      return;
    }
    if (ctx.accepts('json', 'html') === 'html') return renderSignedOutPage(ctx);
    ctx.body = {};
  };
  router.get('/oidc/end_session', (ctx: Context) => endSession(ctx, ctx.query));
  router.post('/oidc/end_session', parseBody(), (ctx: Context) => endSession(ctx, bodyOf(ctx)));
}
