import type { Context } from 'koa';
import { formatChallenge, type Challenge } from '../errors/www-authenticate.js';
import { TOTP_BINDING } from '../oidc/factor-binding.js';
import type { AuthQuery } from '../oidc/login-state.js';
import { loginExtrasSchema } from '../schemas/authenticate-schemas.js';
import { parseInput } from '../schemas/parse-input.js';

/** Request and response conventions shared by every `/oidc/login/*` route */

export const wantsHtml = (ctx: Context) => ctx.accepts('json', 'html') === 'html';

/** A browser form post: such requests get pages back instead of JSON. */
export const isHtmlForm = (ctx: Context) => ctx.is('urlencoded') === 'urlencoded' && wantsHtml(ctx);

/**
 * The auth request id: body `authRequestId`, body `id`, query `authRequestID` or `id`.
 * Every login response carries it back in header `auth-request-id`.
 */
export function authRequestIdOf(ctx: Context, body: Record<string, unknown> = {}): unknown {
  const id = body.authRequestId ?? body.id ?? ctx.query.authRequestID ?? ctx.query.id;
  // Echoed only when it has the shape of an id: other text could break the header (a 500).
  if (typeof id === 'string' && AUTH_REQUEST_ID.test(id)) ctx.set('auth-request-id', id);
  return id;
}

const AUTH_REQUEST_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** `configTypes` as a JSON array or a repeated form field (one value arrives as a string). */
export function configTypesOf(body: Record<string, unknown>): string[] | undefined {
  const raw = typeof body.configTypes === 'string' ? [body.configTypes] : body.configTypes;
  return parseInput(loginExtrasSchema, { configTypes: raw }).configTypes;
}

/**
 * The factors still owed: 200 `{authQueries}`, header `totp-required: true`
 * when TOTP is one of them (not for a passkey the policy requires, which no code pays), and the `svc-secondary-ext-jwt` challenge when that JWT was missing,
 * expired or invalid.
 */
export function setOwedHeaders(ctx: Context, authQueries: AuthQuery[], challenges: Challenge[] = []): void {
  if (authQueries.some(TOTP_BINDING.matches)) ctx.set('totp-required', 'true');
  if (challenges.length > 0) ctx.set('WWW-Authenticate', challenges.map(formatChallenge));
}

export function sendOwed(ctx: Context, authQueries: AuthQuery[], challenges: Challenge[] = []): void {
  setOwedHeaders(ctx, authQueries, challenges);
  ctx.status = 200;
  ctx.body = { authQueries };
}
