import { isIP } from 'node:net';
import { firstPemBlock } from './pem-blocks.js';
import { assertKeyMatchesCert, importSigningKey, randomSerialNumber } from './pki-keys.js';
import { x509 } from './x509-runtime.js';

/** A certificate with its private key, both PEM; keyPem is PKCS#8. */
export interface KeyedCert {
  certPem: string;
  keyPem: string;
}

export interface CertificateSpec {
  subjectCn: string;
  publicKey: x509.PublicKeyType;
  extensions: x509.Extension[];
  validityDays: number;
  notBefore?: Date;
  notAfter?: Date;
}

const DAY_MS = 24 * 60 * 60 * 1000;
// Peers whose clocks run a little behind must not see a fresh certificate as not yet valid.
const CLOCK_SKEW_MS = 5 * 60 * 1000;

export const KEY_CERT_SIGN = x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign;

/** A JSON name, so commas or quotes in a CN are encoded as data rather than parsed as DN syntax. */
export const commonName = (cn: string): x509.JsonName => [{ CN: [cn] }];

export function validityWindow(
  validityDays: number,
  explicit: { notBefore?: Date; notAfter?: Date } = {},
  issuerNotAfter?: Date,
): { notBefore: Date; notAfter: Date } {
  if (!(validityDays > 0)) throw new RangeError(`validityDays must be positive, got ${validityDays}`);
  const now = Date.now();
  let notAfter = explicit.notAfter ?? new Date(now + validityDays * DAY_MS);
  // A default lifetime stops at the issuer's: past that date the chain no longer validates anyway.
  if (!explicit.notAfter && issuerNotAfter && issuerNotAfter < notAfter) notAfter = issuerNotAfter;
  // An explicit past notAfter (expired-cert tests) still gets notBefore < notAfter.
  const notBefore =
    explicit.notBefore ?? new Date(Math.min(now - CLOCK_SKEW_MS, notAfter.getTime() - DAY_MS));
  if (notBefore >= notAfter) throw new RangeError('notBefore must be earlier than notAfter');
  return { notBefore, notAfter };
}

/** SAN entries for host names and IP literals (IPv6 may come bracketed, as in URLs). */
export function hostSans(hosts: string[]): x509.JsonGeneralNames {
  return hosts.map((host) => {
    const bare = host.replace(/^\[(.*)\]$/, '$1');
    return isIP(bare) ? { type: 'ip', value: bare } : { type: 'dns', value: host };
  });
}

/** End-entity extensions shared by server and client leaves. */
export function leafExtensions(
  usages: x509.ExtendedKeyUsage[],
  sans: x509.JsonGeneralNames,
): x509.Extension[] {
  return [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension(usages),
    ...(sans.length ? [new x509.SubjectAlternativeNameExtension(sans)] : []),
  ];
}

/** x509 omits the final newline; without it, concatenated chains break ("bad end line" in OpenSSL). */
export const pemText = (item: x509.X509Certificate | x509.Pkcs10CertificateRequest): string =>
  `${item.toString('pem')}\n`;

export function firstCertificatePem(pem: string): string {
  const block = firstPemBlock(pem, 'CERTIFICATE');
  if (!block) throw new Error('no PEM certificate found');
  return block.pem;
}

function assertCanIssue(caCert: x509.X509Certificate): void {
  const constraints = caCert.getExtension(x509.BasicConstraintsExtension);
  if (!constraints?.ca) throw new Error(`"${caCert.subject}" is not a CA certificate`);
}

/** AKI repeats the issuer's own SKI when it has one (RFC 5280 §4.2.1.1), whatever method made it. */
async function authorityKeyId(caCert: x509.X509Certificate): Promise<x509.AuthorityKeyIdentifierExtension> {
  const ski = caCert.getExtension(x509.SubjectKeyIdentifierExtension);
  if (ski) return new x509.AuthorityKeyIdentifierExtension(ski.keyId);
  return x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey);
}

/** Signs `spec` with the CA's key; the issuer name is copied from the CA so the bytes match exactly. */
export async function signCertificate(ca: KeyedCert, spec: CertificateSpec): Promise<x509.X509Certificate> {
  const caPem = firstCertificatePem(ca.certPem);
  const caCert = new x509.X509Certificate(caPem);
  assertCanIssue(caCert);
  if (caCert.notAfter.getTime() <= Date.now()) throw new Error(`CA "${caCert.subject}" has expired`);
  assertKeyMatchesCert(ca.keyPem, caPem);
  const signer = await importSigningKey(ca.keyPem);
  const window = validityWindow(spec.validityDays, spec, caCert.notAfter);
  return x509.X509CertificateGenerator.create({
    serialNumber: randomSerialNumber(),
    subject: commonName(spec.subjectCn),
    issuer: caCert.subjectName,
    ...window,
    publicKey: spec.publicKey,
    signingKey: signer.key,
    signingAlgorithm: signer.algorithm,
    extensions: [
      ...spec.extensions,
      await x509.SubjectKeyIdentifierExtension.create(spec.publicKey),
      await authorityKeyId(caCert),
    ],
  });
}
