import { createApiClient } from './api-client.js';
import { CliError } from './cli-error.js';
import {
  isOidcSession,
  loadSession,
  saveSession,
  withSessionLock,
  type OidcSession,
} from './session-store.js';

/** The public client the CLI signs in as (the same as every other native app). */
export const CLIENT_ID = 'svc';

/**
 * How long before its expiry an access token is refreshed: a minute, or half its lifetime when
 * that is shorter, so a command started just before the expiry still finds it valid at the server.
 */
const REFRESH_MARGIN_MS = 60_000;

/** The part of a token endpoint answer (RFC 6749 §5.1) the CLI keeps. */
export function sessionFromTokens(
  base: Pick<OidcSession, 'url' | 'ca' | 'tokenEndpoint'>,
  body: Record<string, unknown>,
  previousRefreshToken?: string,
  now = Date.now(),
): OidcSession {
  const { access_token: accessToken, expires_in: expiresIn, refresh_token: refreshToken } = body;
  if (typeof accessToken !== 'string' || typeof expiresIn !== 'number' || !(expiresIn > 0))
    throw new CliError(`${base.tokenEndpoint} answered without an access token and its expires_in`);
  const kept = typeof refreshToken === 'string' ? refreshToken : previousRefreshToken;
  return {
    kind: 'oidc',
    url: base.url,
    ca: base.ca,
    tokenEndpoint: base.tokenEndpoint,
    accessToken,
    obtainedAt: new Date(now).toISOString(),
    accessTokenExpiresAt: new Date(now + expiresIn * 1000).toISOString(),
    ...(kept === undefined ? {} : { refreshToken: kept }),
  };
}

/** True once the access token is within its refresh margin of expiring (or past it). */
export function refreshDue(session: OidcSession, now = Date.now()): boolean {
  const expires = Date.parse(session.accessTokenExpiresAt);
  const lifetime = expires - Date.parse(session.obtainedAt);
  if (!Number.isFinite(expires) || !Number.isFinite(lifetime)) return true;
  return now >= expires - Math.min(REFRESH_MARGIN_MS, lifetime / 2);
}

const SIGN_IN_AGAIN = 'run svc login again';

/** An OAuth 2 error answer in one phrase: its `error` (else the status) and its description. */
export function oauthErrorText(status: number, body: Record<string, unknown>): string {
  const error = typeof body.error === 'string' ? body.error : `HTTP ${status}`;
  const description = typeof body.error_description === 'string' ? `: ${body.error_description}` : '';
  return `${error}${description}`;
}

/** Overloaded or restarting (429, 5xx): the request may succeed later, unchanged. */
const isTryAgainStatus = (status: number) => status === 429 || status >= 500;

/** One refresh grant (RFC 6749 §6); the answer's new refresh token replaces the old one. */
async function refreshGrant(session: OidcSession): Promise<OidcSession> {
  if (!session.refreshToken) throw new CliError(`the session has expired: ${SIGN_IN_AGAIN}`);
  const api = createApiClient({ url: session.url, ca: session.ca });
  try {
    const { status, body } = await api.oauth('POST', session.tokenEndpoint, {
      grant_type: 'refresh_token',
      refresh_token: session.refreshToken,
      client_id: CLIENT_ID,
    });
    if (status === 200) return sessionFromTokens(session, body, session.refreshToken);
    if (body.error === 'invalid_grant')
      throw new CliError(`the session has ended (its refresh token was refused): ${SIGN_IN_AGAIN}`);
    const error = oauthErrorText(status, body);
    // Overloaded or restarting (429, 503 temporarily_unavailable): the session itself is intact.
    if (isTryAgainStatus(status))
      throw new CliError(`the controller could not refresh the session just now (${error}): try again`);
    throw new CliError(`refreshing the session failed (${error}): ${SIGN_IN_AGAIN}`);
  } finally {
    await api.close();
  }
}

/**
 * The stored session, refreshed first when its access token is about to expire, and saved again
 * (written to a temporary file and renamed over the old one) before any command uses it.
 */
export async function freshSession(
  env: Record<string, string | undefined>,
  session: OidcSession,
): Promise<OidcSession> {
  if (!refreshDue(session)) return session;
  return withSessionLock(env, async () => {
    // Another svc command may have refreshed while this one waited for the lock.
    const current = loadSession(env);
    if (!isOidcSession(current)) throw new CliError(`the stored session changed meanwhile: try again`);
    if (!refreshDue(current)) return current;
    const refreshed = await refreshGrant(current);
    saveSession(env, refreshed);
    return refreshed;
  });
}
