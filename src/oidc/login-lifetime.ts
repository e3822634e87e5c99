/** How long an authorization code can be exchanged (seconds): the provider's `ttl.AuthorizationCode`. */
export const CODE_SECONDS = 60;

/**
 * The rows of a login (Grant, login facts, API session) are written just before its code: they
 * outlive the code by this much, so that a code exchanged in its last second still finds them.
 */
const PENDING_SLACK_SECONDS = 5;

/** What just happened to a login; each event may move the end of its rows later, never earlier. */
export type LoginEvent =
  /** The login completed: its code is issued and not yet exchanged. */
  | { kind: 'login' }
  /** A code or refresh token was redeemed: an access token is being issued. */
  | { kind: 'access-token'; accessTokenSeconds: number }
  /** A refresh token was issued; its expiry is the end of the refresh chain so far. */
  | { kind: 'refresh-token'; expiresAt: Date };

/**
 * The lifetime of an OIDC API session: when every row its login keeps (the provider's Grant, our
 * login facts and the `api_sessions` row) may go (docs/architecture.md, "Lifetime of an OIDC API
 * session"). Rows take the later of their current end and this one:
 * - after the login, the end of its code: a code never exchanged leaves nothing behind;
 * - once a token is issued, the end of its access token (rounded up to the next second, since the
 *   provider counts whole seconds from a moment just after this one);
 * - with `offline_access`, the end of the refresh chain: each rotated refresh token lives
 *   `refreshTokenDuration` from its issue and never past `maxSessionDuration` from the login
 *   (create-provider.ts), so a rotation moves the end later until that cap.
 */
export function loginRowsEnd(now: Date, event: LoginEvent): Date {
  const nextSecond = (Math.floor(now.getTime() / 1000) + 1) * 1000;
  switch (event.kind) {
    case 'login':
      return new Date(nextSecond + (CODE_SECONDS + PENDING_SLACK_SECONDS) * 1000);
    case 'access-token':
      return new Date(nextSecond + event.accessTokenSeconds * 1000);
    case 'refresh-token':
      return event.expiresAt;
  }
}
