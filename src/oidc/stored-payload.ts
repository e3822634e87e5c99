import type { AdapterPayload } from 'oidc-provider';

/**
 * What the adapter stores of a model: the payload without any copy of its own id, since the id
 * is the bearer secret (a code, a refresh token, a session cookie, an interaction id) and the row
 * is keyed by its hash (docs/adr/0004-hashed-token-ids.md). `find` is always called with the id,
 * so `jti` is put back from it. Copies of the id the provider keeps elsewhere in a payload:
 * - `returnTo` of an Interaction ends in its uid (`…/authorization/<uid>`): stored split around the id,
 *   as an array the provider never writes there, and joined again on the way out;
 * - `session.cookie` of an Interaction is the browser session's id: oidc-provider 9 writes it
 *   but never reads it, so it is not stored.
 */
export function sealPayload(id: string, payload: AdapterPayload): Record<string, unknown> {
  const { jti: _jti, ...rest } = payload as Record<string, unknown>;
  if (typeof rest.returnTo === 'string' && rest.returnTo.includes(id)) {
    rest.returnTo = rest.returnTo.split(id);
  }
  const session = rest.session as Record<string, unknown> | undefined;
  if (session && typeof session === 'object' && 'cookie' in session) {
    const { cookie: _cookie, ...kept } = session;
    rest.session = kept;
  }
  return rest;
}

/**
 * The payload as the provider stored it. `id` is undefined for a lookup by another key
 * (Session.findByUid): such a session is only read (its account and grants), never saved.
 */
export function openPayload(id: string | undefined, stored: Record<string, unknown>): AdapterPayload {
  const payload: Record<string, unknown> = { ...stored };
  if (id !== undefined) {
    payload.jti = id;
    if (Array.isArray(payload.returnTo)) payload.returnTo = (payload.returnTo as string[]).join(id);
  }
  return payload as AdapterPayload;
}
