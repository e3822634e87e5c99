import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { LOGIN_PREFIX } from './login-paths.js';

/*
 * A device authorization's login belongs to the browser that confirmed the device's code
 * (docs/adr/0005-in-process-cookie-less-resume.md, its amendment). The tokens of such a login go
 * to whoever polls the device code, not to a client holding a PKCE verifier: an auth request id
 * alone would let anyone who confirmed a code send the login page to someone else and poll that
 * person's tokens. The confirming browser gets a cookie bound to the interaction and the code it
 * confirmed; every login step of a device interaction needs it.
 */

/** How the cookies are told apart: one per interaction, so that two devices can be confirmed at once. */
const COOKIE_PREFIX = 'svc_device_login_';

/** The user code as the provider keeps it (normalised: upper case, no dash). */
const NORMALISED_CODE = /^[A-Z0-9]{1,32}$/;

/** The cookie's name for the interaction `uid`: a digest, so that no id is spelled in a header. */
export function deviceLoginCookieName(uid: string): string {
  return `${COOKIE_PREFIX}${createHash('sha256').update(`device-login-cookie\n${uid}`).digest('base64url').slice(0, 16)}`;
}

const mac = (key: string, uid: string, userCode: string) =>
  createHmac('sha256', key).update(`device-login\n${uid}\n${userCode}`).digest('base64url');

/** What `cookies.set` takes (the provider's and Koa's `ctx.cookies`). */
interface CookieWriter {
  set(name: string, value: string, options: Record<string, unknown>): unknown;
}

interface CookieReader {
  get(name: string, options: { signed: boolean }): string | undefined;
}

/**
 * Set on the response to the code's confirmation, with the cookie key: httpOnly, Secure,
 * SameSite=Lax, sent only to the login paths, for as long as the device code lives. Not signed by
 * keygrip: the value is its own MAC, over the interaction and the code.
 */
export function bindDeviceLogin(
  cookies: CookieWriter,
  key: string,
  binding: { uid: string; userCode: string; seconds: number },
): void {
  const { uid, userCode, seconds } = binding;
  cookies.set(deviceLoginCookieName(uid), `${userCode}.${mac(key, uid, userCode)}`, {
    path: LOGIN_PREFIX,
    httpOnly: true,
    secure: true,
    sameSite: 'lax',
    signed: false,
    overwrite: true,
    maxAge: seconds * 1000,
  });
}

/**
 * The user code this browser confirmed for the interaction `uid` (normalised), when its cookie
 * carries a valid MAC of them; otherwise undefined. The MAC is compared in constant time.
 */
export function confirmedUserCode(cookies: CookieReader, key: string, uid: string): string | undefined {
  const value = cookies.get(deviceLoginCookieName(uid), { signed: false });
  if (typeof value !== 'string' || value.length > 128) return undefined;
  const dot = value.indexOf('.');
  const userCode = value.slice(0, Math.max(0, dot));
  if (!NORMALISED_CODE.test(userCode)) return undefined;
  const given = Buffer.from(value.slice(dot + 1));
  const expected = Buffer.from(mac(key, uid, userCode));
  return given.length === expected.length && timingSafeEqual(given, expected) ? userCode : undefined;
}
