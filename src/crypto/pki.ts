import { exportPrivateKeyPem, generateEcKeyPair, EC_P256_SHA256, randomSerialNumber } from './pki-keys.js';
import {
  commonName,
  hostSans,
  KEY_CERT_SIGN,
  leafExtensions,
  pemText,
  signCertificate,
  validityWindow,
  type KeyedCert,
} from './pki-sign.js';
import { x509 } from './x509-runtime.js';

export type { KeyedCert } from './pki-sign.js';
export { CsrError, generateClientKeyAndCsr, signClientCsr } from './pki-csr.js';

const ROOT_DAYS = 3650;
const SIGNING_CA_DAYS = 1825;
const LEAF_DAYS = 365;

async function keyed(cert: x509.X509Certificate, keys: CryptoKeyPair): Promise<KeyedCert> {
  return { certPem: pemText(cert), keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/** A self-signed root CA; no path length limit, so it can certify signing CAs. */
export async function generateRootCa(opts: {
  commonName: string;
  validityDays?: number;
}): Promise<KeyedCert> {
  const keys = await generateEcKeyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerialNumber(),
    name: commonName(opts.commonName),
    ...validityWindow(opts.validityDays ?? ROOT_DAYS),
    keys,
    signingAlgorithm: EC_P256_SHA256,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(KEY_CERT_SIGN, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return keyed(cert, keys);
}

/** An intermediate CA under `root` that may sign leaves only (pathLen 0, RFC 5280 §4.2.1.9). */
export async function generateSigningCa(
  root: KeyedCert,
  opts: { commonName: string; validityDays?: number },
): Promise<KeyedCert> {
  const keys = await generateEcKeyPair();
  const cert = await signCertificate(root, {
    subjectCn: opts.commonName,
    publicKey: keys.publicKey,
    validityDays: opts.validityDays ?? SIGNING_CA_DAYS,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(KEY_CERT_SIGN, true),
    ],
  });
  return keyed(cert, keys);
}

/**
 * A TLS server leaf for `hosts` (DNS names and IP literals). CN repeats the first host for old
 * clients; modern ones match SANs only (RFC 6125 §6.4.4). clientAuth lets the same cert dial peers.
 */
export async function issueServerCert(
  ca: KeyedCert,
  opts: { hosts: string[]; validityDays?: number },
): Promise<KeyedCert> {
  if (opts.hosts.length === 0) throw new RangeError('a server certificate needs at least one host');
  const keys = await generateEcKeyPair();
  const usages = [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth];
  const cert = await signCertificate(ca, {
    subjectCn: opts.hosts[0],
    publicKey: keys.publicKey,
    validityDays: opts.validityDays ?? LEAF_DAYS,
    extensions: leafExtensions(usages, hostSans(opts.hosts)),
  });
  return keyed(cert, keys);
}

/**
 * A clientAuth leaf with a fresh key, for certs that come from a CA we hold the key of: third-party
 * CA fixtures, CA verification certs (CN = verification token) and expired certs (past notAfter).
 */
export async function issueClientCert(
  ca: KeyedCert,
  opts: { commonName: string; validityDays?: number; notAfter?: Date; notBefore?: Date },
): Promise<KeyedCert> {
  const keys = await generateEcKeyPair();
  const cert = await signCertificate(ca, {
    subjectCn: opts.commonName,
    publicKey: keys.publicKey,
    validityDays: opts.validityDays ?? LEAF_DAYS,
    notBefore: opts.notBefore,
    notAfter: opts.notAfter,
    extensions: leafExtensions([x509.ExtendedKeyUsage.clientAuth], []),
  });
  return keyed(cert, keys);
}
