/**
 * `otpauth://totp/<issuer>:<identity name>?issuer=<issuer>&secret=<base32>`.
 * Both halves of the label are percent-encoded (Key Uri Format), the colon between them is kept:
 * authenticator apps split the issuer off at it, so a name containing `:` must not add another.
 */
export function provisioningUrl(issuer: string, identityName: string, secret: string): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(identityName)}`;
  return `otpauth://totp/${label}?issuer=${encodeURIComponent(issuer)}&secret=${secret}`;
}
