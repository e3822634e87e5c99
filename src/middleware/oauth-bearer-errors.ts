import type { Context, Next } from 'koa';
import { isAppError } from '../errors/app-error.js';
import { formatOAuthBearerChallenge, oauthBearerErrorOf } from '../errors/www-authenticate.js';

/**
 * For OAuth protected resources of the OIDC API (userinfo): a refused or missing access token is
 * answered as RFC 6750 §3.1 prescribes — 401, `WWW-Authenticate: Bearer realm="svc-oidc",
 * error="invalid_token", error_description="…"` and the body `{error, error_description}`, or the
 * bare realm and `{}` when no token was sent — instead of the Edge challenges and envelope, which
 * OIDC clients do not understand. Every other error (e.g. an external JWT challenge) keeps the
 * Edge form.
 */
export async function oauthBearerErrors(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
  } catch (err) {
    const [only, ...others] = isAppError(err) && err.status === 401 ? err.challenges : [];
    const oauth = only && others.length === 0 ? oauthBearerErrorOf(only) : undefined;
    if (!oauth) throw err;
    ctx.status = 401;
    ctx.set('WWW-Authenticate', formatOAuthBearerChallenge(oauth));
    ctx.body = oauth.error ? { error: oauth.error, error_description: oauth.description } : {};
  }
}
