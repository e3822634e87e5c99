import { createPrivateKey, randomBytes, X509Certificate as NodeX509Certificate } from 'node:crypto';
import { webCrypto } from './x509-runtime.js';

/** Signature parameters accepted by both WebCrypto `sign` and x509's generators. */
export interface SigningAlgorithm {
  name: string;
  hash: string;
}

export interface SigningKey {
  key: CryptoKey;
  algorithm: SigningAlgorithm;
}

const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;
export const EC_P256_SHA256: SigningAlgorithm = { name: 'ECDSA', hash: 'SHA-256' };

// Node names curves after OpenSSL; WebCrypto after NIST. The hash follows the curve size
// (RFC 5480 §4) so a P-384 CA does not weaken its signatures with SHA-256.
const WEB_CURVES: Record<string, { namedCurve: string; hash: string }> = {
  prime256v1: { namedCurve: 'P-256', hash: 'SHA-256' },
  secp384r1: { namedCurve: 'P-384', hash: 'SHA-384' },
  secp521r1: { namedCurve: 'P-521', hash: 'SHA-512' },
};

/** P-256: generation takes milliseconds, where RSA-2048 takes up to seconds on slow cores. */
export function generateEcKeyPair(): Promise<CryptoKeyPair> {
  return webCrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify']);
}

export function toPem(label: string, der: ArrayBuffer | Uint8Array): string {
  const lines =
    Buffer.from(der as Uint8Array)
      .toString('base64')
      .match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

export async function exportPrivateKeyPem(key: CryptoKey): Promise<string> {
  return toPem('PRIVATE KEY', await webCrypto.subtle.exportKey('pkcs8', key));
}

/**
 * Imports a CA private key for signing. Accepts any PEM Node can read (PKCS#8, SEC1, PKCS#1),
 * so keys of CAs created with other tools work too; EC and RSA (PKCS#1 v1.5, SHA-256) only.
 */
export async function importSigningKey(keyPem: string): Promise<SigningKey> {
  const keyObject = createPrivateKey(keyPem);
  const pkcs8 = keyObject.export({ format: 'der', type: 'pkcs8' });
  if (keyObject.asymmetricKeyType === 'rsa') {
    const algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    return { key: await webCrypto.subtle.importKey('pkcs8', pkcs8, algorithm, false, ['sign']), algorithm };
  }
  const curve = WEB_CURVES[keyObject.asymmetricKeyDetails?.namedCurve ?? ''];
  if (keyObject.asymmetricKeyType !== 'ec' || !curve) {
    throw new Error(`unsupported CA key type ${keyObject.asymmetricKeyType ?? 'unknown'}`);
  }
  const imported = { name: 'ECDSA', namedCurve: curve.namedCurve };
  const key = await webCrypto.subtle.importKey('pkcs8', pkcs8, imported, false, ['sign']);
  return { key, algorithm: { name: 'ECDSA', hash: curve.hash } };
}

/** Fails early when a CA's key and certificate were mixed up, instead of issuing unverifiable certs. */
export function assertKeyMatchesCert(keyPem: string, certPem: string): void {
  if (!new NodeX509Certificate(certPem).checkPrivateKey(createPrivateKey(keyPem))) {
    throw new Error('the CA private key does not match the CA certificate');
  }
}

/** 16 random bytes with the top bit clear: positive without a padding byte (RFC 5280 §4.1.2.2). */
export function randomSerialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  if (bytes[0] === 0) bytes[0] = 1; // keep the full 16 bytes in the DER integer
  return bytes.toString('hex');
}
