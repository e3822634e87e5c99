import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';

/** `https://authority[/path][?query]`: the scheme is case-insensitive (RFC 3986 §3.1). */
const ABSOLUTE_HTTPS = /^https:\/\/([^/?#]*)(.*)$/is;
/** Any `scheme://…` target; a request target is otherwise a path (or `*`, or CONNECT's authority). */
const ABSOLUTE_ANY = /^[a-z][a-z0-9+.-]*:\/\//i;

const refuse = (reason: string) =>
  new AppError('COULD_NOT_VALIDATE', { cause: { field: 'request-target', reason } });

/**
 * A request target in absolute form (`GET https://host/path HTTP/1.1`) becomes its origin form
 * before anything routes it: RFC 9112 §3.2.2 says a server MUST accept it and take the host from
 * it, ignoring the Host header. So the target's authority replaces the Host header, and whatever
 * picks an issuer by Host (among the addresses of this listener only) judges that authority
 * exactly as it judges a Host header. We only speak HTTPS, so a target of any other scheme names
 * nothing we serve; user information is refused as RFC 9110 §4.2.4 advises.
 */
export function toOriginForm(ctx: Context): void {
  const target = ctx.req.url ?? '/';
  if (target.startsWith('/') || !ABSOLUTE_ANY.test(target)) return;
  const match = ABSOLUTE_HTTPS.exec(target);
  if (!match) throw refuse('an absolute request target must be an https URL');
  const [, authority, rest] = match as unknown as [string, string, string];
  if (authority === '') throw refuse('an absolute request target must name a host');
  if (authority.includes('@')) throw refuse('a request target must not carry user information');
  const originForm = rest.startsWith('/') ? rest : `/${rest}`;
  ctx.req.headers.host = authority;
  ctx.req.url = originForm;
  // Koa took the original URL when it made the context; what runs after sees the origin form.
  ctx.originalUrl = ctx.request.originalUrl = originForm;
}
