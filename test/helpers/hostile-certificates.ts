import { X509Certificate as NodeX509Certificate } from 'node:crypto';
import {
  exportPrivateKeyPem,
  generateEcKeyPair,
  importSigningKey,
  randomSerialNumber,
} from '../../src/crypto/pki-keys.js';
import {
  commonName,
  KEY_CERT_SIGN,
  leafExtensions,
  pemText,
  signCertificate,
  type KeyedCert,
} from '../../src/crypto/pki-sign.js';
import { x509 } from '../../src/crypto/x509-runtime.js';

/**
 * Certificates a CA could issue that must not authenticate anyone, and a re-encoded copy of a
 * real one; shared by the certificate tests and the hostile-input generators.
 */

const DAY_MS = 24 * 60 * 60 * 1000;
/** Order of the P-256 group (FIPS 186-4 D.1.2.3). */
const P256_N = BigInt('0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551');

async function keyed(cert: x509.X509Certificate, keys: CryptoKeyPair): Promise<KeyedCert> {
  return { certPem: pemText(cert), keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/** A leaf whose extendedKeyUsage names serverAuth only: a web server's certificate. */
export async function serverAuthOnlyLeaf(ca: KeyedCert, cn: string): Promise<KeyedCert> {
  const keys = await generateEcKeyPair();
  const cert = await signCertificate(ca, {
    subjectCn: cn,
    publicKey: keys.publicKey,
    validityDays: 30,
    extensions: leafExtensions([x509.ExtendedKeyUsage.serverAuth], []),
  });
  return keyed(cert, keys);
}

/** A leaf without an extendedKeyUsage extension: usable for any purpose (RFC 5280 §4.2.1.12). */
export async function noEkuLeaf(ca: KeyedCert, cn: string): Promise<KeyedCert> {
  const keys = await generateEcKeyPair();
  const cert = await signCertificate(ca, {
    subjectCn: cn,
    publicKey: keys.publicKey,
    validityDays: 30,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    ],
  });
  return keyed(cert, keys);
}

/**
 * An intermediate CA under `root` that expired yesterday, and a fresh leaf (clientAuth) it signed
 * while its own key was still in use. `chainPem` is the leaf then the intermediate, as a client
 * presents it.
 */
export async function leafUnderExpiredIntermediate(
  root: KeyedCert,
  cn: string,
): Promise<{ leaf: KeyedCert; intermediatePem: string; chainPem: string }> {
  const now = Date.now();
  const caKeys = await generateEcKeyPair();
  const intermediate = await signCertificate(root, {
    subjectCn: `${cn} expired sub-CA`,
    publicKey: caKeys.publicKey,
    validityDays: 30,
    notBefore: new Date(now - 30 * DAY_MS),
    notAfter: new Date(now - DAY_MS),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(KEY_CERT_SIGN, true),
    ],
  });
  const intermediatePem = pemText(intermediate);
  const ca = { certPem: intermediatePem, keyPem: await exportPrivateKeyPem(caKeys.privateKey) };
  const signer = await importSigningKey(ca.keyPem);
  const leafKeys = await generateEcKeyPair();
  // signCertificate refuses an expired issuer; this one is built by hand on purpose.
  const leafCert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerialNumber(),
    subject: commonName(cn),
    issuer: intermediate.subjectName,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + 30 * DAY_MS),
    publicKey: leafKeys.publicKey,
    signingKey: signer.key,
    signingAlgorithm: signer.algorithm,
    extensions: [
      ...leafExtensions([x509.ExtendedKeyUsage.clientAuth], []),
      await x509.AuthorityKeyIdentifierExtension.create(intermediate.publicKey),
    ],
  });
  const leaf = await keyed(leafCert, leafKeys);
  return { leaf, intermediatePem, chainPem: leaf.certPem + intermediatePem };
}

function derTlv(tag: number, body: Buffer): Buffer {
  const n = body.length;
  const length =
    n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, body]);
}

/** The TLVs directly inside the constructed value `der` (lengths up to 0xffff). */
function children(der: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  const inner = (at: number) => {
    const first = der[at + 1]!;
    if (first < 0x80) return { start: at + 2, length: first };
    const count = first & 0x7f;
    return { start: at + 2 + count, length: der.readUIntBE(at + 2, count) };
  };
  const outer = inner(0);
  for (let at = outer.start; at < outer.start + outer.length;) {
    const { start, length } = inner(at);
    parts.push(der.subarray(at, start + length));
    at = start + length;
  }
  return parts;
}

function contentOf(tlv: Buffer): Buffer {
  const first = tlv[1]!;
  const length = first < 0x80 ? first : tlv.readUIntBE(2, first & 0x7f);
  return tlv.subarray(tlv.length - length);
}

function derInteger(value: bigint): Buffer {
  let hex = value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  let bytes = Buffer.from(hex, 'hex');
  if (bytes[0]! & 0x80) bytes = Buffer.concat([Buffer.from([0]), bytes]);
  return derTlv(0x02, bytes);
}

/**
 * The same certificate with its P-256 ECDSA signature (r, s) re-encoded as (r, n − s): it still
 * verifies under the issuer's key, but its DER and SHA-1 fingerprint differ.
 */
export function malleatedCopy(certPem: string): string {
  const der = Buffer.from(new NodeX509Certificate(certPem).raw);
  const [tbs, sigAlg, bitString] = children(der) as [Buffer, Buffer, Buffer];
  const signature = contentOf(bitString); // 0x00 unused bits, then SEQUENCE { r, s }
  const [r, s] = children(signature.subarray(1)).map((int) =>
    BigInt(`0x${contentOf(int).toString('hex')}`),
  ) as [bigint, bigint];
  const newSignature = derTlv(0x30, Buffer.concat([derInteger(r), derInteger(P256_N - s)]));
  const body = Buffer.concat([tbs, sigAlg, derTlv(0x03, Buffer.concat([Buffer.from([0]), newSignature]))]);
  const copy = derTlv(0x30, body).toString('base64');
  return `-----BEGIN CERTIFICATE-----\n${copy.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
}
