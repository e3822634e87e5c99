// tsyringe inside @peculiar/x509 2.x needs Reflect metadata before the x509 module loads.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { randomBytes, webcrypto } from 'node:crypto';

export interface TlsMaterial {
  certPem: string;
  keyPem: string;
}

const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const ONE_DAY_MS = 86_400_000;

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der).toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${b64.trimEnd()}\n-----END ${label}-----\n`;
}

/**
 * A self-signed P-256 certificate for 127.0.0.1: the same key type and signature as the
 * service's generated server certificate, so the baselines pay the same TLS costs. Clients
 * trust the certificate itself.
 */
export async function selfSignedLoopbackCert(): Promise<TlsMaterial> {
  const crypto = webcrypto as unknown as Crypto;
  x509.cryptoProvider.set(crypto);
  const keys = await crypto.subtle.generateKey(EC_P256, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8)
      .toString('hex')
      .replace(/^[89a-f]/, '1'),
    name: 'CN=127.0.0.1',
    notBefore: new Date(now - ONE_DAY_MS),
    notAfter: new Date(now + ONE_DAY_MS),
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: 'ip', value: '127.0.0.1' }]),
    ],
  });
  const pkcs8 = await crypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { certPem: cert.toString('pem'), keyPem: pem('PRIVATE KEY', pkcs8) };
}
