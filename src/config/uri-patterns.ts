import type { Config } from './load-config.js';
import type { ListenerSpec } from './web-listeners.js';

/** Default redirect URI patterns of the `svc` client. */
export const DEFAULT_REDIRECT_URIS = [
  'http://localhost:*/auth/callback',
  'http://127.0.0.1:*/auth/callback',
  'https://localhost:*/auth/callback',
  'https://127.0.0.1:*/auth/callback',
];

/**
 * The account page's own sign-in callback (`/account/callback`): on a listener that serves the
 * account page, each issuer also accepts `https://<its address>/account/callback`, the controller
 * being its own relying party there. Only that exact URI of that same address; the configured
 * patterns are not widened (docs/security.md, "The account page").
 */
const ACCOUNT_CALLBACK_PATH = '/account/callback';
export const accountCallbackUri = (address: string) => `https://${address}${ACCOUNT_CALLBACK_PATH}`;

export const DEFAULT_POST_LOGOUT_URIS = DEFAULT_REDIRECT_URIS.map((u) =>
  u.replace(/\/auth\/callback$/, '/auth/logout'),
);

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** `scheme://host:*` followed by the rest: `*` is allowed only in the port position. */
const PORT_WILDCARD = /^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]+|[a-z][a-z0-9+.-]*:\/\/\[[0-9a-f:.]+\]):\*(.*)$/i;

function compile(pattern: string): (uri: string) => boolean {
  const wildcard = PORT_WILDCARD.exec(pattern);
  if (!wildcard) return (uri) => uri === pattern;
  const [, origin, rest] = wildcard;
  // Stricter than a glob: `*` is a port of digits only, so it cannot widen the host; everything else
  // compares as an exact string (RFC 6749 §3.1.2.3).
  const regex = new RegExp(`^${escapeRegExp(origin!)}:(\\d{1,5})${escapeRegExp(rest!)}$`);
  return (uri) => {
    const port = regex.exec(uri)?.[1];
    return port !== undefined && Number(port) <= 65535;
  };
}

/**
 * The one matcher for redirect and post-logout URIs: exact string comparison, except that a `*`
 * in the port position of a pattern matches any port made of digits.
 */
export function createUriMatcher(patterns: readonly string[]): (uri: string) => boolean {
  const checks = patterns.map(compile);
  return (uri) => typeof uri === 'string' && checks.some((check) => check(uri));
}

/** `https://app.example:*` style origins of the patterns, for CORS. */
export function originsOf(patterns: readonly string[]): string[] {
  const origins = patterns.map((p) => {
    const wildcard = PORT_WILDCARD.exec(p);
    if (wildcard) return `${wildcard[1]}:*`;
    try {
      return new URL(p).origin;
    } catch {
      return undefined;
    }
  });
  return [...new Set(origins.filter((o): o is string => o !== undefined && o !== 'null'))];
}

/** The redirect URI patterns of a listener: its binding options, else the global setting, else the defaults. */
export function redirectPatternsFor(config: Config, listener: ListenerSpec): string[] {
  return (
    listener.apis.get('edge-oidc')?.redirectURIs ?? config.edge?.oidc.redirectURIs ?? DEFAULT_REDIRECT_URIS
  );
}

export function postLogoutPatternsFor(config: Config, listener: ListenerSpec): string[] {
  return (
    listener.apis.get('edge-oidc')?.postLogoutURIs ??
    config.edge?.oidc.postLogoutURIs ??
    DEFAULT_POST_LOGOUT_URIS
  );
}

/** CORS: the origins of the redirect patterns plus SVC_CORS_ORIGINS. */
export function corsOriginMatcher(redirectPatterns: readonly string[], extraOrigins: readonly string[]) {
  return createUriMatcher([...originsOf(redirectPatterns), ...extraOrigins]);
}
