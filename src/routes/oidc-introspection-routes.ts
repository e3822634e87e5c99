import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';
import { challenges, formatOAuthBearerChallenge } from '../errors/www-authenticate.js';
import { secondaryExtJwtGate } from '../middleware/authenticate.js';
import { bodyOf, MAX_BODY_BYTES, parseBody } from '../middleware/parse-body.js';
import { INTROSPECTION_ROUTE } from '../oidc/create-provider.js';
import { OIDC_MOUNT } from '../oidc/login-paths.js';
import { issuerEntryOf } from '../oidc/oidc-dispatch.js';
import { bearerTokens } from '../services/auth/bearer-tokens.js';
import type { RouteDeps } from './route-deps.js';

export const INTROSPECTION_PATH = `${OIDC_MOUNT}${INTROSPECTION_ROUTE}`;

const FORM = 'application/x-www-form-urlencoded';

const hasBody = (ctx: Context) =>
  (ctx.get('content-length') !== '' && ctx.get('content-length') !== '0') ||
  ctx.get('transfer-encoding') !== '';

/** A parameter given at most once, as a string (OAuth refuses repeated parameters). */
function param(body: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const value = body[name];
  if (value === undefined || value === '') {
    if (required) throw new AppError('COULD_NOT_VALIDATE', { cause: { field: name, reason: 'is required' } });
    return undefined;
  }
  if (typeof value !== 'string') {
    throw new AppError('COULD_NOT_VALIDATE', { cause: { field: name, reason: 'must be given once' } });
  }
  return value;
}

/**
 * `POST /oidc/token/introspection` (RFC 7662): a resource server asks whether a token is live.
 * The caller authenticates with its own access token (§2.1 leaves the means open): admins, and
 * identities with the `token-introspection` permission. Refusals are those of an OAuth protected
 * resource, as at userinfo (RFC 6750 §3.1, in the OAuth form by `oauthErrors`); the answer is
 * `{active: false}` for every token that is not live, whatever the reason.
 */
export function oidcIntrospectionRoutes(router: Router, deps: RouteDeps): void {
  const { oidc, principals, introspectionLimiter } = deps;
  const parse = parseBody();

  router.all(INTROSPECTION_PATH, async (ctx: Context) => {
    if (ctx.method !== 'POST') throw new AppError('METHOD_NOT_ALLOWED', { headers: { allow: 'POST' } });
    const tokens = bearerTokens(ctx.get('authorization'));
    if (tokens.length === 0)
      throw new AppError('UNAUTHORIZED', { challenges: challenges.missing().slice(1) });
    const caller = await oidc.verifier.bearer.verify(tokens, ctx.req.socket);
    await secondaryExtJwtGate(principals, tokens, caller);
    if (!(await oidc.introspection.mayIntrospect(caller))) {
      const refusal = {
        error: 'insufficient_scope',
        description: 'the caller may not introspect tokens (admins and the token-introspection permission)',
      } as const;
      ctx.status = 403;
      ctx.set('WWW-Authenticate', formatOAuthBearerChallenge(refusal));
      ctx.body = { error: refusal.error, error_description: refusal.description };
      return;
    }
    // Per caller, not per address: a resource server behind the same address as the users it
    // serves never spends their login budget, nor they its.
    const wait = await introspectionLimiter.take(`identity:${caller.identityId}`);
    if (wait > 0) throw new AppError('RATE_LIMITED', { headers: { 'retry-after': String(wait) } });
    // As parseBody: the size first, whatever the body is.
    if (Number(ctx.get('content-length') || 0) > MAX_BODY_BYTES)
      throw new AppError('REQUEST_ENTITY_TOO_LARGE');
    if (hasBody(ctx) && !ctx.is(FORM)) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', {
        message: `the content type ${JSON.stringify(ctx.get('content-type'))} is not supported (supported: ${FORM})`,
      });
    }
    await parse(ctx, async () => undefined);
    const body = bodyOf(ctx);
    const token = param(body, 'token', true)!;
    param(body, 'token_type_hint', false);
    ctx.body = await oidc.introspection.introspect(token, issuerEntryOf(ctx).issuer);
  });
}
