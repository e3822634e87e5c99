import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';

/** `https://authority[/path][?query]`: the scheme is case-insensitive (RFC 3986 §3.1). */
const ABSOLUTE_HTTPS = /^https:\/\/([^/?#]*)(.*)$/is;
/** Any `scheme://…` target; a request target is otherwise a path (or `*`, or CONNECT's authority). */
const ABSOLUTE_ANY = /^[a-z][a-z0-9+.-]*:\/\//i;
/**
 * `host[:port]` (RFC 3986 §3.2.2–3.2.3): an IP literal in brackets, or a registered name or IPv4
 * address, then an optional decimal port. Anything else (`a:b:c`, `[::1]x`, `x]`) names no host.
 */
const AUTHORITY = /^(?:\[[0-9a-f:.]+\]|[a-z0-9\-._~!$&'()*+,;=%]+)(?::[0-9]*)?$/i;

const refusal = (reason: string) =>
  new AppError('COULD_NOT_VALIDATE', { cause: { field: 'request-target', reason } });

/** The origin form of the target, or why it has none. */
function originFormOf(ctx: Context): AppError | undefined {
  const target = ctx.req.url ?? '/';
  if (target.startsWith('/') || !ABSOLUTE_ANY.test(target)) return undefined;
  const match = ABSOLUTE_HTTPS.exec(target);
  if (!match) return refusal('an absolute request target must be an https URL');
  const [, authority, rest] = match as unknown as [string, string, string];
  if (authority === '') return refusal('an absolute request target must name a host');
  if (authority.includes('@')) return refusal('a request target must not carry user information');
  if (!AUTHORITY.test(authority)) return refusal('the authority of the request target is malformed');
  const originForm = rest.startsWith('/') ? rest : `/${rest}`;
  ctx.req.headers.host = authority;
  ctx.req.url = originForm;
  // Koa took the original URL when it made the context; what runs after sees the origin form.
  ctx.originalUrl = ctx.request.originalUrl = originForm;
  return undefined;
}

/** Whether reading the path throws (Node's url.parse refuses e.g. `a:[/x`). */
function unparsable(ctx: Context): AppError | undefined {
  try {
    void ctx.path;
    return undefined;
  } catch {
    return refusal('the request target cannot be parsed');
  }
}

/**
 * Runs first, before the request's log line and metrics take the path. A request target in
 * absolute form (`GET https://host/path HTTP/1.1`) becomes its origin form: RFC 9112 §3.2.2 says
 * a server MUST accept it and take the host from it, ignoring the Host header. So the target's
 * authority replaces the Host header, and whatever picks an issuer by Host (among the addresses of
 * this listener only) judges that authority exactly as it judges a Host header. We only speak
 * HTTPS, so a target of any other scheme names nothing we serve; user information is refused as
 * RFC 9110 §4.2.4 advises. Returns why a target cannot be served, for the caller to answer once
 * its request id and error envelope exist; the path must then not be read.
 */
export function toOriginForm(ctx: Context): AppError | undefined {
  return originFormOf(ctx) ?? unparsable(ctx);
}
