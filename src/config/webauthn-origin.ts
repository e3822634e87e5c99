/**
 * Why `origin` cannot be a WebAuthn origin of this service, or undefined. Browsers only run
 * ceremonies on secure origins, and an origin is a scheme, host and port only: anything else in
 * the setting is a mistake that would make every ceremony fail (or accept a page it should not).
 */
export function webauthnOriginProblem(origin: string): string | undefined {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return `${JSON.stringify(origin)} is not a URL (expected https://host[:port])`;
  }
  if (url.protocol !== 'https:') return `${origin} must start with https://`;
  if (url.username || url.password) return `${origin} must not carry a user name or password`;
  if (url.origin !== origin) {
    // Browsers compare the origin as a string: a path, a trailing slash or :443 never matches.
    return `${origin} must be exactly https://host[:port], without a path, query or fragment (${url.origin}?)`;
  }
  return undefined;
}

/** `host` is `rpId` or a name under it (WebAuthn's registrable domain suffix rule, simplified). */
export const hostWithin = (host: string, rpId: string) => host === rpId || host.endsWith(`.${rpId}`);
