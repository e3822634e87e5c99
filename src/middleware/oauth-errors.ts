import type { Context, Next } from 'koa';
import { isAppError } from '../errors/app-error.js';
import { formatOAuthBearerChallenge, oauthBearerErrorOf } from '../errors/www-authenticate.js';

const OAUTH_STATUSES = new Set([400, 401, 413, 415, 429]);

/**
 * The OAuth endpoints (token, authorization, revoke, userinfo, token introspection) answer refusals
 * the way OAuth clients read them instead of in the Edge envelope:
 * - a refused or missing access token: RFC 6750 §3.1 — 401, `WWW-Authenticate: Bearer
 *   realm="svc-oidc", error="invalid_token", error_description="…"` and `{error, error_description}`,
 *   or the bare realm and `{}` when no token was sent; any other challenge (the secondary external
 *   JWT) keeps the Edge form, which only our own clients answer;
 * - a rate limit: 429 `temporarily_unavailable` with its Retry-After (RFC 6749 §4.1.2.1);
 * - a refusal of the request's content (parameters, media type, size): its status with
 *   `invalid_request` (RFC 6749 §5.2).
 * Unknown paths and wrong methods (404, 405) keep the Edge envelope every path under /oidc has;
 * server errors and everything the provider answers itself pass through unchanged.
 */
export async function oauthErrors(ctx: Context, next: Next): Promise<void> {
  // The response deadline, which answers outside this middleware, answers in the OAuth form too.
  ctx.state.oauthEndpoint = true;
  try {
    await next();
  } catch (err) {
    if (!isAppError(err) || !OAUTH_STATUSES.has(err.status)) throw err;
    if (err.status === 401) {
      const [only, ...others] = err.challenges;
      const bearer = only && others.length === 0 ? oauthBearerErrorOf(only) : undefined;
      if (!bearer) throw err;
      ctx.status = 401;
      ctx.set('WWW-Authenticate', formatOAuthBearerChallenge(bearer));
      ctx.body = bearer.error ? { error: bearer.error, error_description: bearer.description } : {};
      return;
    }
    ctx.set(err.headers);
    ctx.status = err.status;
    ctx.body = {
      error: err.status === 429 ? 'temporarily_unavailable' : 'invalid_request',
      error_description: oauthDescription(err.message, err.clientCause),
    };
  }
}

function oauthDescription(message: string, cause?: Record<string, unknown>): string {
  const { field, reason } = cause ?? {};
  return typeof field === 'string' && typeof reason === 'string' ? `${field} ${reason}` : message;
}
