import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { certFingerprint } from '../crypto/certificates.js';
import { firstPemBlock } from '../crypto/pem-blocks.js';
import type { EnrollmentMethod } from '../repositories/enrollments-repository.js';
import type { OpenEnrollment } from './enrollment-tokens.js';

/** The claims of decisions.md §3; `jti` is the enrollment token itself. */
export interface EnrollmentClaims {
  iss: string;
  sub: string;
  jti: string;
  em: EnrollmentMethod;
  exp: number;
  iat: number;
}

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

export function jwsAlgorithmFor(key: KeyObject): string {
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  const alg = key.asymmetricKeyType === 'ec' && EC_ALGORITHMS[key.asymmetricKeyDetails?.namedCurve ?? ''];
  if (!alg) throw new Error(`unsupported server key type ${key.asymmetricKeyType ?? 'unknown'}`);
  return alg;
}

const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

/**
 * Signs enrollment JWTs with the key of the TLS server certificate, `kid` = that certificate's
 * SHA-1 fingerprint (docs/adr/0001): a client that has not yet trusted our CA verifies the JWT with
 * the public key of the certificate the controller presents on the TLS connection (as OpenZiti's
 * SDKs do), so it knows it reached the controller that issued the token before trusting the CA
 * bundle it downloads there.
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

/**
 * Verifies an enrollment JWT with the public key of `serverCertPem` (the first certificate of a
 * PEM bundle), as a client does with the certificate the controller presented. Throws when the
 * signature, `kid` or expiry does not hold.
 */
export async function verifyEnrollmentJwt(jwt: string, serverCertPem: string): Promise<EnrollmentClaims> {
  const leafPem = firstPemBlock(serverCertPem, 'CERTIFICATE')?.pem;
  if (!leafPem) throw new Error('no certificate to verify the enrollment JWT with');
  const publicKey = new X509Certificate(leafPem).publicKey;
  const { payload, protectedHeader } = await jwtVerify(jwt, publicKey, {
    algorithms: [jwsAlgorithmFor(publicKey)],
  });
  if (protectedHeader.kid !== certFingerprint(leafPem)) {
    throw new Error('the enrollment JWT was not signed by this certificate');
  }
  return payload as unknown as EnrollmentClaims;
}
