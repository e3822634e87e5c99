import { createPublicKey } from 'node:crypto';
import { firstPemBlock } from './pem-blocks.js';
import { exportPrivateKeyPem, generateEcKeyPair, EC_P256_SHA256 } from './pki-keys.js';
import { commonName, leafExtensions, pemText, signCertificate, type KeyedCert } from './pki-sign.js';
import { x509 } from './x509-runtime.js';

/** The CSR cannot be used: unparseable, bad self-signature, or an unaccepted key. */
export class CsrError extends Error {
  override readonly name = 'CsrError';
}

const MIN_RSA_BITS = 2048;
const ACCEPTED_CURVES = new Set(['prime256v1', 'secp384r1']);
// SPIFFE ID rules: trust domain [a-z0-9._-], path segments [A-Za-z0-9._-] (SPIFFE-ID specification §2.1, §2.2).
const TRUST_DOMAIN = /^[a-z0-9._-]+$/;
const PATH_SEGMENT = /^(?!\.\.?$)[A-Za-z0-9._-]+$/;

// RFC 7468 §7; older tools (Netscape, Windows) write the NEW form.
const CSR_LABELS = ['CERTIFICATE REQUEST', 'NEW CERTIFICATE REQUEST'];
const DER_SEQUENCE = 0x30;

/**
 * PEM is decoded here, in linear time: x509 reads PEM text with a backtracking regex that takes
 * seconds on a request body full of BEGIN lines. Text without PEM (base64, hex) goes to x509 as is.
 */
function csrInput(csrPem: string): string | Uint8Array<ArrayBuffer> {
  if (!csrPem.includes('-----BEGIN')) return csrPem;
  const block = CSR_LABELS.map((label) => firstPemBlock(csrPem, label)).find(Boolean);
  // x509 reads bytes that do not start a DER SEQUENCE as PEM text again.
  if (!block || block.der[0] !== DER_SEQUENCE) throw new CsrError('not a PKCS#10 certificate request');
  return new Uint8Array(block.der);
}

function parseCsr(csrPem: string): x509.Pkcs10CertificateRequest {
  const input = csrInput(csrPem);
  try {
    return new x509.Pkcs10CertificateRequest(input);
  } catch {
    throw new CsrError('not a PKCS#10 certificate request');
  }
}

/** Proof of possession (RFC 2986 §3): only the holder of the private key can sign the request. */
async function assertSelfSigned(csr: x509.Pkcs10CertificateRequest): Promise<void> {
  let valid = false;
  try {
    valid = await csr.verify();
  } catch {
    // unsupported or malformed signature algorithms end up here
  }
  if (!valid) throw new CsrError('the certificate request signature does not verify');
}

function assertAcceptedKey(csr: x509.Pkcs10CertificateRequest): void {
  const key = createPublicKey({ key: Buffer.from(csr.publicKey.rawData), format: 'der', type: 'spki' });
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa' && (details.modulusLength ?? 0) >= MIN_RSA_BITS) return;
  if (key.asymmetricKeyType === 'ec' && ACCEPTED_CURVES.has(details.namedCurve ?? '')) return;
  throw new CsrError('the key must be RSA (2048 bits or more) or EC P-256/P-384');
}

function spiffeId(trustDomain: string, identityId: string): string {
  if (!TRUST_DOMAIN.test(trustDomain)) throw new RangeError(`invalid SPIFFE trust domain "${trustDomain}"`);
  if (!PATH_SEGMENT.test(identityId))
    throw new RangeError(`identity id "${identityId}" is not a SPIFFE path segment`);
  return `spiffe://${trustDomain}/identity/${identityId}`;
}

/**
 * Issues a client leaf for a verified CSR. Only the CSR's key is used: subject and any requested
 * extensions are ignored, because the identity, not the requester, decides what the cert says.
 */
export async function signClientCsr(
  ca: KeyedCert,
  opts: { csrPem: string; identityId: string; trustDomain: string; validityDays?: number },
): Promise<string> {
  const uri = spiffeId(opts.trustDomain, opts.identityId);
  const csr = parseCsr(opts.csrPem);
  await assertSelfSigned(csr);
  assertAcceptedKey(csr);
  const cert = await signCertificate(ca, {
    subjectCn: opts.identityId,
    publicKey: csr.publicKey,
    validityDays: opts.validityDays ?? 365,
    extensions: leafExtensions([x509.ExtendedKeyUsage.clientAuth], [{ type: 'url', value: uri }]),
  });
  return pemText(cert);
}

/** An EC P-256 key and a CSR for it, as `svc enroll` sends them. */
export async function generateClientKeyAndCsr(opts: {
  commonName: string;
}): Promise<{ keyPem: string; csrPem: string }> {
  const keys = await generateEcKeyPair();
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: commonName(opts.commonName),
    keys,
    signingAlgorithm: EC_P256_SHA256,
  });
  return { keyPem: await exportPrivateKeyPem(keys.privateKey), csrPem: pemText(csr) };
}
