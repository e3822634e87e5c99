import type { X509Certificate } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, errors, importX509, jwtVerify } from 'jose';
import { CliError } from './cli-error.js';
import { getWithoutVerification, parsePemBundle, fetchServerLeaf } from './unverified-tls.js';

export type EnrollMethod = 'ott' | 'ottca' | 'updb';

/** The claims of an enrollment JWT. */
export interface EnrollmentClaims {
  iss: string;
  sub: string;
  jti: string;
  em: EnrollMethod;
  exp: number;
}

// The JWT is signed with the controller's TLS server key: EC P-256 by default, RSA when configured.
const ALGORITHMS = ['ES256', 'ES384', 'ES512', 'RS256', 'EdDSA'];
const METHODS = new Set<string>(['ott', 'ottca', 'updb']);

/** Reads the claims without trusting them yet; malformed input is refused with what is wrong. */
export function decodeEnrollmentJwt(jwt: string): EnrollmentClaims {
  let claims: Record<string, unknown>;
  try {
    claims = decodeJwt(jwt);
  } catch {
    throw new CliError('the file does not hold a JWT');
  }
  const { iss, sub, jti, em, exp } = claims;
  if (typeof iss !== 'string' || !iss.startsWith('https://')) {
    throw new CliError('the enrollment JWT has no https issuer (iss)');
  }
  if (typeof sub !== 'string' || typeof jti !== 'string' || typeof exp !== 'number') {
    throw new CliError('the enrollment JWT lacks sub, jti or exp');
  }
  if (typeof em !== 'string' || !METHODS.has(em)) {
    throw new CliError(`the enrollment JWT names an unknown method (em): ${String(em)}`);
  }
  if (exp * 1000 <= Date.now()) {
    throw new CliError(`the enrollment JWT expired at ${new Date(exp * 1000).toISOString()}`);
  }
  return { iss, sub, jti, em: em as EnrollMethod, exp };
}

const hexFingerprint = (text: string) => text.replace(/:/g, '').toLowerCase();

/** The JWT must be signed by the key of the certificate the issuer presents on TLS. */
async function verifyWithLeaf(jwt: string, claims: EnrollmentClaims, leaf: X509Certificate) {
  const { alg, kid } = decodeProtectedHeader(jwt);
  if (!alg || !ALGORITHMS.includes(alg)) {
    throw new CliError(
      `the enrollment JWT uses algorithm ${String(alg)}; expected one of ${ALGORITHMS.join(', ')}`,
    );
  }
  try {
    const key = await importX509(leaf.toString(), alg);
    await jwtVerify(jwt, key, { algorithms: [alg], issuer: claims.iss });
  } catch (err) {
    if (err instanceof errors.JWTExpired) throw new CliError('the enrollment JWT has expired');
    // The kid names the signing certificate (SHA-1 of its DER); a mismatch explains the failure.
    const hint =
      kid && hexFingerprint(kid) !== hexFingerprint(leaf.fingerprint)
        ? ` (it names certificate ${kid}, the server presents ${hexFingerprint(leaf.fingerprint)})`
        : '';
    throw new CliError(
      `the enrollment JWT is not signed by the server at ${claims.iss}${hint}: refusing to enroll`,
    );
  }
}

/**
 * Trust from the token, the way OpenZiti enrolls: take the issuer's TLS certificate without
 * verification, accept it only if its key signed the JWT, then fetch the CA bundle over a
 * connection pinned to that same certificate and verify everything after it with that bundle.
 */
export async function establishTrust(
  jwt: string,
  claims: EnrollmentClaims,
): Promise<{ origin: string; ca: string }> {
  const issuer = new URL(claims.iss);
  const leaf = await fetchServerLeaf(issuer);
  await verifyWithLeaf(jwt, claims, leaf);
  const { text } = await getWithoutVerification(
    new URL('/.well-known/est/cacerts', issuer.origin),
    'application/x-pem-file',
    leaf,
  );
  parsePemBundle(text, `the CA bundle of ${issuer.origin}`);
  return { origin: issuer.origin, ca: text };
}
