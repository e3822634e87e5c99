import { createPrivateKey, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { certFingerprint } from '../crypto/certificates.js';
import type { OpenEnrollment } from './enrollment-tokens.js';

export interface EnrollmentJwtDeps {
  /** The TLS server identity: leaf first, then its chain; and the leaf's private key. */
  server: { certPem: string; keyPem: string };
  /** `https://<advertised address>`, read at signing time (ports are known only once bound). */
  issuer: () => string;
}

// JWS algorithm per key type (RFC 7518 §3.1); the hash follows the curve size (RFC 5480 §4).
const EC_ALGORITHMS: Record<string, string> = {
  prime256v1: 'ES256',
  secp384r1: 'ES384',
  secp521r1: 'ES512',
};

function jwsAlgorithmFor(key: KeyObject): string {
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  const alg = key.asymmetricKeyType === 'ec' && EC_ALGORITHMS[key.asymmetricKeyDetails?.namedCurve ?? ''];
  if (!alg) throw new Error(`unsupported server key type ${key.asymmetricKeyType ?? 'unknown'}`);
  return alg;
}

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

/**
 * Signs enrollment JWTs (`iss`, `sub` = identity id, `jti` = the enrollment token, `em` = method,
 * `iat`, `exp`) with the key of the TLS server certificate, `kid` = that certificate's SHA-1
 * fingerprint (docs/adr/0001-enrollment-jwt-signed-by-server-key.md): a client that has not yet
 * trusted our CA verifies the JWT with the public key of the certificate the controller presents
 * on the TLS connection (as OpenZiti's SDKs do, and `svc enroll` in src/cli/enrollment-trust.ts),
 * so it knows it reached the controller that issued the token before trusting the CA bundle it
 * downloads there.
 */
export function createEnrollmentJwtSigner({ server, issuer }: EnrollmentJwtDeps) {
  const key = createPrivateKey(server.keyPem);
  const alg = jwsAlgorithmFor(key);
  const kid = certFingerprint(server.certPem);

  return async function signEnrollmentJwt(enrollment: OpenEnrollment): Promise<string> {
    return (
      new SignJWT({ em: enrollment.method })
        .setProtectedHeader({ alg, kid, typ: 'JWT' })
        .setIssuer(issuer())
        .setSubject(enrollment.identityId)
        .setJti(enrollment.token)
        // iat is the enrollment's creation, so the JWT shown for one enrollment does not change.
        .setIssuedAt(seconds(enrollment.createdAt))
        .setExpirationTime(seconds(enrollment.expiresAt))
        .sign(key)
    );
  };
}

export type EnrollmentJwtSigner = ReturnType<typeof createEnrollmentJwtSigner>;
