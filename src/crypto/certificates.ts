import { createHash, X509Certificate as NodeX509Certificate } from 'node:crypto';
import { firstPemBlock, MAX_PEM_BLOCKS, pemBlocks, PemError } from './pem-blocks.js';
import { x509 } from './x509-runtime.js';

/** Input that is not an X.509 certificate (callers usually answer it as a client error). */
export class CertificateError extends Error {
  override readonly name = 'CertificateError';
}

export type CertificateInput = string | Buffer | Uint8Array;

export interface ParsedCertificate {
  subjectCn?: string;
  issuerDn: string;
  subjectDn: string;
  notBefore: Date;
  notAfter: Date;
  isCa: boolean;
  uriSans: string[];
  fingerprint: string;
  /** See certTbsSha256. */
  tbsSha256: string;
  serialNumber: string;
}

const CERTIFICATE = 'CERTIFICATE';
const DER_SEQUENCE = 0x30;
// Deep enough for any real PKI; bounds the walk over attacker-supplied intermediates.
const MAX_INTERMEDIATES = 8;

/**
 * The certificate blocks of a PEM bundle, each from BEGIN through END. More than `maxBlocks` is a
 * CertificateError; only files the operator configured are read without the default bound.
 */
export function splitPemBundle(pem: string, maxBlocks = MAX_PEM_BLOCKS): string[] {
  try {
    return pemBlocks(pem, CERTIFICATE, maxBlocks).map((block) => block.pem);
  } catch (err) {
    if (err instanceof PemError) throw new CertificateError(err.message);
    throw err;
  }
}

/** The PEM of the only certificate block in `pem`; undefined when it holds none or several. */
export function singleCertificatePem(pem: string): string | undefined {
  try {
    return pemBlocks(pem, CERTIFICATE, 1)[0]?.pem;
  } catch (err) {
    if (err instanceof PemError) return undefined;
    throw err;
  }
}

/** DER of the input: DER bytes as they are, else the first PEM block, else bare base64. */
function toDer(input: CertificateInput): Buffer {
  if (typeof input !== 'string' && input[0] === DER_SEQUENCE) return Buffer.from(input);
  const text = typeof input === 'string' ? input : Buffer.from(input).toString('latin1');
  if (!text.includes('-----BEGIN')) return Buffer.from(text, 'base64');
  const first = firstPemBlock(text, CERTIFICATE);
  if (!first) throw new CertificateError('no PEM certificate found');
  return first.der;
}

function nodeCert(input: CertificateInput): NodeX509Certificate {
  try {
    return new NodeX509Certificate(toDer(input));
  } catch (err) {
    if (err instanceof CertificateError) throw err;
    throw new CertificateError('not an X.509 certificate');
  }
}

function peculiarCert(der: Buffer): x509.X509Certificate {
  // x509 reads bytes that are not a DER SEQUENCE as PEM text with a backtracking regex.
  if (der[0] !== DER_SEQUENCE) throw new CertificateError('not an X.509 certificate');
  try {
    return new x509.X509Certificate(new Uint8Array(der));
  } catch {
    throw new CertificateError('not an X.509 certificate');
  }
}

/** Lowercase hex SHA-1 of the DER, the thumbprint form most tools show (colons removed). */
export function certFingerprint(pemOrDer: CertificateInput): string {
  return createHash('sha1').update(toDer(pemOrDer)).digest('hex');
}

/** Offset just past a DER tag and length at `at`, and the length of the content. */
function derHeader(der: Buffer, at: number): { start: number; length: number } {
  const first = der[at + 1];
  if (first === undefined) throw new CertificateError('not an X.509 certificate');
  if (first < 0x80) return { start: at + 2, length: first };
  const count = first & 0x7f;
  if (count === 0 || count > 4) throw new CertificateError('not an X.509 certificate');
  let length = 0;
  for (let i = 0; i < count; i += 1) length = length * 256 + (der[at + 2 + i] ?? 0);
  return { start: at + 2 + count, length };
}

/**
 * Lowercase hex SHA-256 of the tbsCertificate (RFC 5280 §4.1.1.1): everything the CA signed,
 * without the signature. An ECDSA signature (r, s) verifies as (r, n − s) too, so anyone holding a
 * certificate can make a copy with another DER and another SHA-1 fingerprint; this hash is the
 * same for both and names the certificate itself.
 */
export function certTbsSha256(pemOrDer: CertificateInput): string {
  const der = toDer(pemOrDer);
  if (der[0] !== DER_SEQUENCE) throw new CertificateError('not an X.509 certificate');
  const outer = derHeader(der, 0);
  if (der[outer.start] !== DER_SEQUENCE) throw new CertificateError('not an X.509 certificate');
  const tbs = derHeader(der, outer.start);
  const end = tbs.start + tbs.length;
  if (end > der.length) throw new CertificateError('not an X.509 certificate');
  return createHash('sha256').update(der.subarray(outer.start, end)).digest('hex');
}

const EKU_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const EKU_ANY = '2.5.29.37.0';
const EKU_OID = '2.5.29.37';

/**
 * RFC 5280 §4.2.1.12: a certificate whose extendedKeyUsage names purposes may be used for those
 * only, so a client certificate needs clientAuth (or anyExtendedKeyUsage) among them. One without
 * the extension is not restricted. A certificate OpenSSL cannot read serves no purpose.
 */
export function permitsClientAuth(pemOrDer: CertificateInput): boolean {
  let usages;
  try {
    usages = nodeCert(pemOrDer).keyUsage;
  } catch (err) {
    if (err instanceof CertificateError) return false;
    throw err;
  }
  if (usages !== undefined) return usages.includes(EKU_CLIENT_AUTH) || usages.includes(EKU_ANY);
  // Node reports no usages both without the extension and with one it cannot decode: only the
  // first is unrestricted, a purpose nobody can read permits nothing.
  try {
    return !peculiarCert(toDer(pemOrDer)).extensions.some((e) => e.type === EKU_OID);
  } catch {
    return false;
  }
}

export function parseCertificate(pem: CertificateInput): ParsedCertificate {
  const der = toDer(pem);
  const cert = peculiarCert(der);
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  return {
    subjectCn: cert.subjectName.getField('CN')[0],
    issuerDn: cert.issuer,
    subjectDn: cert.subject,
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    isCa: cert.getExtension(x509.BasicConstraintsExtension)?.ca ?? false,
    uriSans: (san?.names.items ?? []).filter((name) => name.type === 'url').map((name) => name.value),
    fingerprint: certFingerprint(der),
    tbsSha256: certTbsSha256(der),
    serialNumber: cert.serialNumber.toLowerCase(),
  };
}

/** The parsed certificate, or undefined for input that is not one (a row or file left unread). */
export function tryParseCertificate(pem: CertificateInput): ParsedCertificate | undefined {
  try {
    return parseCertificate(pem);
  } catch (err) {
    if (err instanceof CertificateError) return undefined;
    throw err;
  }
}

/** Why a certificate cannot be a client's own certificate; each caller words it as its error. */
export type ClientLeafProblem = 'unreadable' | 'ca-certificate' | 'outside-validity' | 'not-client-auth';

export type ClientLeaf =
  | { cert: ParsedCertificate; problem: Exclude<ClientLeafProblem, 'unreadable'> | undefined }
  | { cert: undefined; problem: 'unreadable' };

/**
 * The rule for a usable client certificate, the one chain building leaves to callers: an
 * end-entity certificate (not a CA's), whose extendedKeyUsage allows clientAuth, inside its
 * validity period at `at`. Without `at` the dates are not checked: a login policy may accept an
 * expired certificate (`allowExpiredCerts`), so the login checks them itself.
 */
export function readClientLeaf(leaf: CertificateInput, at?: Date): ClientLeaf {
  const cert = tryParseCertificate(leaf);
  if (!cert) return { cert: undefined, problem: 'unreadable' };
  return { cert, problem: clientLeafProblem(leaf, cert, at) };
}

function clientLeafProblem(
  leaf: CertificateInput,
  cert: ParsedCertificate,
  at: Date | undefined,
): Exclude<ClientLeafProblem, 'unreadable'> | undefined {
  if (cert.isCa) return 'ca-certificate';
  if (at && (cert.notBefore > at || cert.notAfter <= at)) return 'outside-validity';
  if (!permitsClientAuth(leaf)) return 'not-client-auth';
  return undefined;
}

/**
 * OpenSSL's checkIssued matches names the RFC 5280 §7.1 way (not byte for byte), compares AKI with
 * SKI and requires keyCertSign when the issuer has a key usage; verify then checks the signature.
 */
function matchesIssuer(cert: NodeX509Certificate, issuer: NodeX509Certificate): boolean {
  try {
    return cert.checkIssued(issuer);
  } catch {
    return false;
  }
}

function signedBy(cert: NodeX509Certificate, issuer: NodeX509Certificate): boolean {
  try {
    return cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

const issuedBy = (cert: NodeX509Certificate, issuer: NodeX509Certificate): boolean =>
  matchesIssuer(cert, issuer) && signedBy(cert, issuer);

/** Whether `caPem` signed `certPem`: issuer name matches the CA's subject and the signature verifies. */
export async function isIssuedBy(certPem: CertificateInput, caPem: string): Promise<boolean> {
  return issuedBy(nodeCert(certPem), nodeCert(caPem));
}

interface ChainCert {
  cert: NodeX509Certificate;
  fingerprint: string;
  pathLength?: number;
}

/** RFC 5280 §6.1.3 (a)(2): the certificate is inside its validity period at `at`. */
const validAt = (cert: NodeX509Certificate, at: Date): boolean =>
  new Date(cert.validFrom) <= at && at <= new Date(cert.validTo);

function chainCerts(pems: string[], at: Date): ChainCert[] {
  return pems
    .flatMap((pem) => splitPemBundle(pem))
    .flatMap((pem) => {
      const der = toDer(pem);
      const cert = nodeCert(der);
      if (!cert.ca) return []; // RFC 5280 §6.1.4 (k): only CA certificates may issue
      // An issuer outside its validity period is no issuer: a path through it is invalid, and a
      // renewed certificate of the same CA among the others may still complete the path.
      if (!validAt(cert, at)) return [];
      const constraints = peculiarCert(der).getExtension(x509.BasicConstraintsExtension);
      return [{ cert, fingerprint: certFingerprint(der), pathLength: constraints?.pathLength }];
    });
}

/**
 * Signature checks one chain build may make per certificate it was given (leaf, intermediates, trust
 * roots).
 */
const SIGNATURE_CHECKS_PER_CERT = 2;

/**
 * Whether `leaf` chains through `intermediates` to one of `trustedRoots` (any trusted CA, not only
 * self-signed ones), every intermediate and the trusted CA being valid at `at` (RFC 5280 §6.1.3
 * (a)(2)). The leaf's own dates and key purpose are left to callers: a policy may accept an
 * expired leaf (`allowExpiredCerts`), and a CA's proof certificate is no client certificate.
 *
 * The path is built the way OpenSSL's verifier builds it: up from the leaf, one issuer per step, a
 * trusted CA if one issued the certificate, else the first unused intermediate that did; no
 * backtracking. Trying every ordering of the intermediates instead costs factorial time in their
 * number, and a peer picks them. Signature checks are counted too; past the budget the chain is
 * untrusted, so even candidates crafted to pass the name and key id match cost linear time.
 */
export async function verifyChain(
  leaf: CertificateInput,
  intermediates: string[],
  trustedRoots: string[],
  at: Date,
): Promise<boolean> {
  const trusted = chainCerts(trustedRoots, at);
  const pool = chainCerts(intermediates, at);
  const leafDer = toDer(leaf);
  let checksLeft = SIGNATURE_CHECKS_PER_CERT * (1 + pool.length + trusted.length);
  /** RFC 5280 §4.2.1.9: at most pathLength intermediates may follow the issuer. */
  const issues = (issuer: ChainCert, below: number, cert: NodeX509Certificate): boolean => {
    if (issuer.pathLength !== undefined && below > issuer.pathLength) return false;
    if (!matchesIssuer(cert, issuer.cert) || checksLeft === 0) return false;
    checksLeft -= 1;
    return signedBy(cert, issuer.cert);
  };
  const used = new Set([certFingerprint(leafDer)]);
  let cert = nodeCert(leafDer);
  for (let below = 0; ; below += 1) {
    if (trusted.some((anchor) => issues(anchor, below, cert))) return true;
    if (below === MAX_INTERMEDIATES) return false;
    const next = pool.find((candidate) => !used.has(candidate.fingerprint) && issues(candidate, below, cert));
    if (!next) return false;
    used.add(next.fingerprint);
    cert = next.cert;
  }
}

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), derLength(body.length), body]);
};

const OID_SIGNED_DATA = Buffer.from('06092a864886f70d010702', 'hex');
const OID_DATA = Buffer.from('06092a864886f70d010701', 'hex');
const VERSION_1 = Buffer.from('020101', 'hex');

/**
 * A degenerate certs-only SignedData (RFC 5272 §4.1 Simple PKI Response), base64 as EST serves it
 * (RFC 7030 §4.1.3). Built by hand because x509's export adds an empty eContent; this matches
 * `openssl crl2pkcs7 -nocrl` byte for byte. Certificates keep the given order.
 */
export function toPkcs7Base64(certPems: string[]): string {
  const certs = certPems.flatMap((pem) => splitPemBundle(pem)).map(toDer);
  const signedData = tlv(
    DER_SEQUENCE,
    VERSION_1,
    tlv(0x31), // digestAlgorithms: none, nothing is signed
    tlv(DER_SEQUENCE, OID_DATA), // encapContentInfo without eContent
    ...(certs.length ? [tlv(0xa0, ...certs)] : []), // [0] IMPLICIT certificates
    tlv(0x31), // signerInfos: none
  );
  return tlv(DER_SEQUENCE, OID_SIGNED_DATA, tlv(0xa0, signedData)).toString('base64');
}
