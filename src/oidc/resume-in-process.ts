import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'koa';
import { OIDC_MOUNT } from './login-paths.js';

/** What the in-process resume needs from the provider of the request's issuer. */
export interface ResumeTarget {
  /** The provider's cached `callback()`. */
  callback: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** `provider.cookieName('resume')`: `_interaction_resume` in oidc-provider 9.13.3. */
  resumeCookieName: string;
  /** keys[0] of `cookies.keys`: the key the provider verifies signed cookies with. */
  cookieKey: string;
  /** `provider.cookieName('session')`: passed to the provider on the device code form only. */
  sessionCookieName: string;
}

/** keygrip's signature of a signed cookie (`cookies` 0.9): HMAC-SHA1 over `name=value`, base64url. */
export function signCookie(name: string, value: string, key: string): string {
  return createHmac('sha1', key).update(`${name}=${value}`).digest('base64url');
}

/**
 * The Cookie header without the cookies of one name (and their `.sig`/`.legacy` companions).
 * Every authorization request is its own login (ADR 0002), so the provider's browser session is
 * never handed to a login: a second user in the same browser cannot run into the provider's
 * session-switch page, and cookie-less clients and browsers take the same path. The device code
 * form alone gets it, for its XSRF secret (ADR 0005's amendment).
 */
export function withoutCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return header;
  const kept = header
    .split(';')
    .map((c) => c.trim())
    .filter((c) => {
      const cookieName = c.slice(0, Math.max(0, c.indexOf('=')));
      return c !== '' && cookieName !== name && !cookieName.startsWith(`${name}.`);
    });
  return kept.length > 0 ? kept.join('; ') : undefined;
}

/** `name=value; name.sig=…`: the signed resume cookie the provider would have set in a browser. */
export function resumeCookieHeader(target: ResumeTarget, uid: string): string {
  const name = target.resumeCookieName;
  return `${name}=${uid}; ${name}.sig=${signCookie(name, uid, target.cookieKey)}`;
}

/**
 * Finishes an interaction without client cookies (docs/adr/0005-in-process-cookie-less-resume.md): the same
 * request is handed to the provider's resume route, the interaction's `returnTo`, carrying a correctly
 * signed resume cookie: `GET /oidc/authorization/<uid>` for an auth request, whose client receives the
 * provider's own 303 to `redirect_uri?code=…&state=…&iss=…`, and `GET /oidc/device/<uid>` for a device
 * authorization, whose browser receives the result page. This is the "emulate the cookie setup" the
 * maintainer pointed to (https://github.com/panva/node-oidc-provider/issues/693);
 * test/oidc/resume-contract.test.ts fails if an upgrade changes the internals.
 */
export async function resumeInProcess(
  target: ResumeTarget,
  ctx: Context,
  interaction: { uid: string; returnTo: string },
) {
  const path = new URL(interaction.returnTo).pathname; // /oidc/authorization/<uid> or /oidc/device/<uid>
  if (!path.startsWith(`${OIDC_MOUNT}/`)) throw new Error(`unexpected resume path ${path}`);
  const req = ctx.req as IncomingMessage & { originalUrl?: string };
  // Only ours: no provider session is handed to a login (the dispatcher strips it everywhere but
  // on the device code form, which a resume is not).
  req.headers.cookie = resumeCookieHeader(target, interaction.uid);
  req.method = 'GET';
  delete req.headers['content-type'];
  delete req.headers['content-length'];
  delete req.headers['transfer-encoding'];
  // The provider derives its mount path from originalUrl minus url (`urlFor` in
  // lib/helpers/oidc_context.js of oidc-provider 9.13.3).
  req.originalUrl = path;
  req.url = path.slice(OIDC_MOUNT.length);
  ctx.respond = false;
  await target.callback(req, ctx.res);
}
