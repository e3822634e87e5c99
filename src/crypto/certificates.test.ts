import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { X509Certificate as NodeX509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CertificateError,
  certFingerprint,
  certTbsSha256,
  isIssuedBy,
  parseCertificate,
  permitsClientAuth,
  singleCertificatePem,
  splitPemBundle,
  toPkcs7Base64,
  verifyChain,
} from './certificates.js';
import {
  generateRootCa,
  generateSigningCa,
  issueClientCert,
  issueServerCert,
  type KeyedCert,
} from './pki.js';
import { exportPrivateKeyPem, generateEcKeyPair } from './pki-keys.js';
import { KEY_CERT_SIGN, pemText, signCertificate } from './pki-sign.js';
import { x509 } from './x509-runtime.js';
import { selfIssuedChain } from '../../test/helpers/self-issued-chain.js';
import {
  leafUnderExpiredIntermediate,
  malleatedCopy,
  noEkuLeaf,
  serverAuthOnlyLeaf,
} from '../../test/helpers/hostile-certificates.js';

let dir: string;
let root: KeyedCert;
let signing: KeyedCert;
let leaf: KeyedCert;
let otherRoot: KeyedCert;

const NEW_EC_REQ = 'req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -noenc'.split(' ');

const openssl = (args: string[], input?: string | Buffer): string =>
  execFileSync('openssl', args, { input, stdio: 'pipe' }).toString();

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

/** A cert issued by openssl, so tests can build chains our own issuing code refuses to make. */
function opensslIssue(name: string, issuer: KeyedCert, extensions: string): KeyedCert {
  const keyPath = join(dir, `${name}.key`);
  const csr = file(`${name}.csr`, openssl([...NEW_EC_REQ, '-keyout', keyPath, '-subj', `/CN=${name}`]));
  const ca = ['-CA', file(`${name}-ca.pem`, issuer.certPem), '-CAkey', file(`${name}-ca.key`, issuer.keyPem)];
  const certPem = openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-days',
    '1',
    '-extfile',
    file(`${name}.ext`, extensions),
    ...ca,
  ]);
  return { certPem, keyPem: readFileSync(keyPath, 'utf8') };
}

/** A CA without a path length limit, so chains of any depth can be built under it. */
async function subCa(issuer: KeyedCert, commonName: string): Promise<KeyedCert> {
  const keys = await generateEcKeyPair();
  const cert = await signCertificate(issuer, {
    subjectCn: commonName,
    publicKey: keys.publicKey,
    validityDays: 1,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(KEY_CERT_SIGN, true),
    ],
  });
  return { certPem: pemText(cert), keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

const opensslFingerprint = (pem: string): string =>
  openssl(['x509', '-noout', '-fingerprint', '-sha1'], pem)
    .trim()
    .split('=')[1]
    .replaceAll(':', '')
    .toLowerCase();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'certificates-test-'));
  root = await generateRootCa({ commonName: 'Chain Root' });
  signing = await generateSigningCa(root, { commonName: 'Chain Signing CA' });
  leaf = await issueClientCert(signing, { commonName: 'leaf' });
  otherRoot = await generateRootCa({ commonName: 'Chain Root' }); // same name, different key
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `work` counting the certificate signature checks it makes (the real checks still run). */
async function countingSignatureChecks<T>(work: () => Promise<T>): Promise<{ result: T; checks: number }> {
  const spy = jest.spyOn(NodeX509Certificate.prototype, 'verify');
  try {
    const result = await work();
    return { result, checks: spy.mock.calls.length };
  } finally {
    spy.mockRestore();
  }
}

describe('certFingerprint', () => {
  it('equals the SHA-1 fingerprint openssl prints, lowercased without colons', () => {
    expect(certFingerprint(leaf.certPem)).toBe(opensslFingerprint(leaf.certPem));
    expect(certFingerprint(leaf.certPem)).toMatch(/^[0-9a-f]{40}$/);
  });

  it('gives the same value for DER bytes, PEM bytes and the first cert of a bundle', () => {
    const der = Buffer.from(new x509.X509Certificate(leaf.certPem).rawData);
    const expected = certFingerprint(leaf.certPem);
    expect(certFingerprint(der)).toBe(expected);
    expect(certFingerprint(new Uint8Array(der))).toBe(expected);
    expect(certFingerprint(Buffer.from(leaf.certPem))).toBe(expected);
    expect(certFingerprint(leaf.certPem + signing.certPem)).toBe(expected);
  });
});

describe('splitPemBundle', () => {
  it('returns each certificate block and skips text and keys around them', () => {
    const bundle = `subject=leaf\n${leaf.certPem}\n\n${leaf.keyPem}${signing.certPem}# trailing\r\n${root.certPem}`;
    const blocks = splitPemBundle(bundle);
    expect(blocks.map(certFingerprint)).toEqual([leaf, signing, root].map((c) => certFingerprint(c.certPem)));
    expect(blocks[0]).toBe(leaf.certPem.trim());
  });

  it('returns nothing for text without certificates', () => {
    expect(splitPemBundle(leaf.keyPem)).toEqual([]);
  });

  it.each([256 * 1024, 1024 * 1024])(
    'reads %i bytes of BEGIN lines without an END in linear time',
    (size) => {
      const marker = '-----BEGIN CERTIFICATE-----';
      const flood = marker.repeat(Math.ceil(size / marker.length));

      const started = performance.now();
      const blocks = splitPemBundle(flood);
      const withCert = splitPemBundle(flood + leaf.certPem);
      const elapsed = performance.now() - started;

      // A lazy regex took seconds for 256 KiB and minutes for 1 MiB; a linear scan takes milliseconds.
      expect(elapsed).toBeLessThan(500);
      expect(blocks).toEqual([]);
      // The last BEGIN line before the END opens the block, whatever came before it.
      expect(withCert.map(certFingerprint)).toEqual([certFingerprint(leaf.certPem)]);
    },
  );

  it('refuses a bundle of more than 16 certificates with a CertificateError', () => {
    expect(splitPemBundle(leaf.certPem.repeat(16))).toHaveLength(16);
    expect(() => splitPemBundle(leaf.certPem.repeat(17))).toThrow(CertificateError);
    expect(() => splitPemBundle(`${leaf.certPem}`.repeat(1000))).toThrow(CertificateError);
  });
});

describe('singleCertificatePem', () => {
  it('is the one certificate block, and undefined for none or several', () => {
    expect(singleCertificatePem(`text\n${leaf.certPem}`)).toBe(leaf.certPem.trim());
    expect(singleCertificatePem(leaf.keyPem)).toBeUndefined();
    expect(singleCertificatePem(leaf.certPem + signing.certPem)).toBeUndefined();
  });
});

describe('toPkcs7Base64', () => {
  it('holds the same certificates, in order, as openssl reads them back', () => {
    const der = Buffer.from(toPkcs7Base64([signing.certPem, root.certPem]), 'base64');
    const printed = openssl(['pkcs7', '-inform', 'DER', '-print_certs'], der);
    expect(splitPemBundle(printed).map(certFingerprint)).toEqual(
      [signing, root].map((c) => certFingerprint(c.certPem)),
    );
  });

  it('is byte for byte what openssl crl2pkcs7 -nocrl produces', () => {
    const certfile = file('bundle.pem', signing.certPem + root.certPem);
    const out = join(dir, 'ref.p7b');
    openssl(['crl2pkcs7', '-nocrl', '-certfile', certfile, '-outform', 'DER', '-out', out]);
    expect(toPkcs7Base64([signing.certPem + root.certPem])).toBe(readFileSync(out).toString('base64'));
  });

  it('parses back with x509', () => {
    const certs = new x509.X509Certificates(toPkcs7Base64([root.certPem]));
    expect(certs.map((c) => c.subject)).toEqual(['CN=Chain Root']);
  });
});

describe('parseCertificate', () => {
  it('reads names, dates, CA flag, URI SANs, fingerprint and serial number', async () => {
    const cert = new x509.X509Certificate(leaf.certPem);
    expect(parseCertificate(leaf.certPem)).toEqual({
      subjectCn: 'leaf',
      issuerDn: 'CN=Chain Signing CA',
      subjectDn: 'CN=leaf',
      notBefore: cert.notBefore,
      notAfter: cert.notAfter,
      isCa: false,
      uriSans: [],
      fingerprint: opensslFingerprint(leaf.certPem),
      tbsSha256: certTbsSha256(leaf.certPem),
      serialNumber: openssl(['x509', '-noout', '-serial'], leaf.certPem).trim().split('=')[1].toLowerCase(),
    });
    expect(parseCertificate(signing.certPem).isCa).toBe(true);
  });

  it('lists URI SANs but not DNS or IP ones', async () => {
    const server = await issueServerCert(signing, { hosts: ['localhost', '127.0.0.1'] });
    expect(parseCertificate(server.certPem).uriSans).toEqual([]);
    const sans = ['-addext', 'subjectAltName=URI:spiffe://a/b,DNS:x'];
    const openssled = openssl([
      ...NEW_EC_REQ,
      '-x509',
      '-keyout',
      join(dir, 'k.pem'),
      '-subj',
      '/O=No CN',
      ...sans,
    ]);
    expect(parseCertificate(openssled)).toMatchObject({ subjectCn: undefined, uriSans: ['spiffe://a/b'] });
  });

  it('throws CertificateError for input that is not a certificate', () => {
    expect(() => parseCertificate('hello')).toThrow(CertificateError);
    expect(() => parseCertificate(leaf.keyPem)).toThrow(CertificateError);
    expect(() => parseCertificate(Buffer.from([0x30, 0x03, 0x02, 0x01, 0x01]))).toThrow(CertificateError);
  });
});

describe('isIssuedBy', () => {
  it('is true for the CA that signed the certificate and false for others', async () => {
    expect(await isIssuedBy(leaf.certPem, signing.certPem)).toBe(true);
    expect(await isIssuedBy(signing.certPem, root.certPem)).toBe(true);
    expect(await isIssuedBy(leaf.certPem, root.certPem)).toBe(false);
  });

  it('is false for a CA with the same name but another key', async () => {
    expect(await isIssuedBy(signing.certPem, otherRoot.certPem)).toBe(false);
  });

  it('is false for a CA with the right key but another name', async () => {
    const caExtensions = [
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
    ];
    const key = file('root.key', root.keyPem);
    const renamed = openssl(['req', '-x509', '-key', key, '-subj', '/CN=Renamed Root', ...caExtensions]);
    expect(await isIssuedBy(signing.certPem, renamed)).toBe(false);
  });
});

describe('verifyChain', () => {
  it('is true from the leaf through the signing CA to the root', async () => {
    expect(await verifyChain(leaf.certPem, [signing.certPem], [root.certPem], new Date())).toBe(true);
  });

  it('accepts an intermediate as the trusted certificate', async () => {
    expect(await verifyChain(leaf.certPem, [], [signing.certPem], new Date())).toBe(true);
  });

  it('is false for a certificate from another CA', async () => {
    const otherSigning = await generateSigningCa(otherRoot, { commonName: 'Chain Signing CA' });
    const stranger = await issueClientCert(otherSigning, { commonName: 'leaf' });
    expect(await verifyChain(stranger.certPem, [otherSigning.certPem], [root.certPem], new Date())).toBe(
      false,
    );
    expect(
      await verifyChain(stranger.certPem, [signing.certPem], [root.certPem, signing.certPem], new Date()),
    ).toBe(false);
  });

  it('is false when the intermediate is missing', async () => {
    expect(await verifyChain(leaf.certPem, [], [root.certPem], new Date())).toBe(false);
  });

  it("leaves the leaf's validity dates to callers", async () => {
    const expired = await issueClientCert(signing, {
      commonName: 'old',
      notAfter: new Date(Date.now() - 86400000),
    });
    expect(await verifyChain(expired.certPem, [signing.certPem], [root.certPem], new Date())).toBe(true);
  });

  it('is false through an intermediate that has expired (RFC 5280 §6.1.3 (a)(2))', async () => {
    const { leaf: below, intermediatePem } = await leafUnderExpiredIntermediate(root, 'below expired');
    expect(await verifyChain(below.certPem, [intermediatePem], [root.certPem], new Date())).toBe(false);
    expect(await verifyChain(below.certPem, [], [intermediatePem], new Date())).toBe(false);
  });

  it('is false when the trusted CA is not valid at the given time', async () => {
    const later = new Date(Date.now() + 3 * 365 * 86400000);
    const muchLater = new Date(Date.now() + 20 * 365 * 86400000);
    expect(await verifyChain(leaf.certPem, [signing.certPem], [root.certPem], later)).toBe(true);
    expect(await verifyChain(leaf.certPem, [signing.certPem], [root.certPem], muchLater)).toBe(false);
  });

  it('does not let a non-CA certificate act as an issuer', async () => {
    // No key usage, so only the CA:FALSE flag says this cert must not sign others.
    const notCa = opensslIssue('not-a-ca', signing, 'basicConstraints=CA:FALSE');
    const underIt = opensslIssue('below', notCa, 'basicConstraints=CA:FALSE');
    expect(await isIssuedBy(underIt.certPem, notCa.certPem)).toBe(true);
    expect(
      await verifyChain(underIt.certPem, [notCa.certPem, signing.certPem], [root.certPem], new Date()),
    ).toBe(false);
    expect(await verifyChain(underIt.certPem, [signing.certPem], [notCa.certPem], new Date())).toBe(false);
  });

  it('finds a path through intermediates given in any order', async () => {
    const caExtensions = 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign';
    const a = opensslIssue('order-a', root, caExtensions);
    const b = opensslIssue('order-b', a, caExtensions);
    const c = opensslIssue('order-c', b, caExtensions);
    const below = await issueClientCert(c, { commonName: 'ordered leaf' });

    for (const order of [
      [a, b, c],
      [c, b, a],
      [b, a, c],
    ]) {
      const { result, checks } = await countingSignatureChecks(() =>
        verifyChain(
          below.certPem,
          order.map((cert) => cert.certPem),
          [root.certPem],
          new Date(),
        ),
      );
      expect(result).toBe(true);
      expect(checks).toBeLessThanOrEqual(4); // one per link: leaf→c→b→a→root
    }
    expect(await verifyChain(below.certPem, [a.certPem, c.certPem], [root.certPem], new Date())).toBe(false);
  });

  it('refuses a leaf with 9 self-issued intermediates with a number of signature checks linear in them', async () => {
    const { leaf: crafted, intermediates } = await selfIssuedChain(9);
    const certs = 1 + intermediates.length + 1; // leaf, intermediates, the trusted root

    const started = performance.now();
    const { result, checks } = await countingSignatureChecks(() =>
      verifyChain(crafted.certPem, intermediates, [root.certPem], new Date()),
    );
    const elapsed = performance.now() - started;

    expect(result).toBe(false);
    expect(checks).toBeGreaterThan(0);
    expect(checks).toBeLessThanOrEqual(2 * certs);
    // Trying every ordering took seconds for 7 such intermediates and minutes for 9.
    expect(elapsed).toBeLessThan(1000);
  });

  it('accepts the same crafted chain when its own CA is trusted, checking one signature', async () => {
    const { ca, leaf: crafted, intermediates } = await selfIssuedChain(9, 'Trusted Self Issued CA');

    const { result, checks } = await countingSignatureChecks(() =>
      verifyChain(crafted.certPem, intermediates, [ca.certPem], new Date()),
    );

    expect(result).toBe(true);
    expect(checks).toBe(1);
  });

  it('refuses a chain once the signature checks exceed twice the certificates given', async () => {
    // Four intermediates named "Same Name" under the root, and decoys with that name but no key
    // id: the name and key id match passes for every decoy at every step, the signature does not.
    const path: KeyedCert[] = [];
    for (let issuer = root; path.length < 4; issuer = path[path.length - 1]!) {
      path.push(await subCa(issuer, 'Same Name'));
    }
    const below = await issueClientCert(path[3]!, { commonName: 'below the same names' });
    const decoy = (i: number) =>
      openssl([
        ...NEW_EC_REQ,
        '-x509',
        '-keyout',
        join(dir, `decoy-${i}.key`),
        '-subj',
        '/CN=Same Name',
        ...['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'subjectKeyIdentifier=none'],
        ...['-addext', 'authorityKeyIdentifier=none'],
      ]);
    const chainWith = (decoys: number) => [
      ...Array.from({ length: decoys }, (_, i) => decoy(i)),
      ...path.map((ca) => ca.certPem),
    ];

    const few = await countingSignatureChecks(() =>
      verifyChain(below.certPem, chainWith(2), [root.certPem], new Date()),
    );
    const many = await countingSignatureChecks(() =>
      verifyChain(below.certPem, chainWith(8), [root.certPem], new Date()),
    );

    expect(few).toEqual({ result: true, checks: 4 * 3 + 1 });
    expect(many.result).toBe(false);
    expect(many.checks).toBe(2 * (1 + 8 + 4 + 1));
  });

  it('enforces the path length of the signing CA', async () => {
    const subCa = await generateSigningCa(signing, { commonName: 'Too Deep CA' });
    const deepLeaf = await issueClientCert(subCa, { commonName: 'deep' });
    expect(
      await verifyChain(deepLeaf.certPem, [subCa.certPem, signing.certPem], [root.certPem], new Date()),
    ).toBe(false);
    expect(await verifyChain(deepLeaf.certPem, [], [subCa.certPem], new Date())).toBe(true);
  });
});

describe('certTbsSha256', () => {
  it('is the SHA-256 of the tbsCertificate, the same for a copy with a re-encoded signature', async () => {
    const der = new NodeX509Certificate(leaf.certPem).raw;
    const [, tbs] = openssl(['asn1parse', '-inform', 'DER'], der).split('\n');
    const [, offset, hl, length] = /^\s*(\d+):d=1\s+hl=(\d+)\s+l=\s*(\d+)/.exec(tbs!)!.map(Number);
    const expected = openssl(['dgst', '-sha256', '-r'], der.subarray(offset, offset! + hl! + length!)).split(
      ' ',
    )[0];
    const copy = malleatedCopy(leaf.certPem);

    expect(certTbsSha256(leaf.certPem)).toBe(expected);
    expect(new NodeX509Certificate(copy).verify(new NodeX509Certificate(signing.certPem).publicKey)).toBe(
      true,
    );
    expect(certFingerprint(copy)).not.toBe(certFingerprint(leaf.certPem));
    expect(certTbsSha256(copy)).toBe(expected);
  });

  it('refuses bytes that are not a certificate', () => {
    expect(() => certTbsSha256(Buffer.from([0x30, 0x03, 0x02, 0x01, 0x00]))).toThrow(CertificateError);
  });
});

describe('permitsClientAuth', () => {
  it('is true with clientAuth or without extendedKeyUsage, false for a server-only certificate', async () => {
    expect(permitsClientAuth(leaf.certPem)).toBe(true);
    expect(permitsClientAuth((await noEkuLeaf(signing, 'any purpose')).certPem)).toBe(true);
    expect(permitsClientAuth((await serverAuthOnlyLeaf(signing, 'web')).certPem)).toBe(false);
    expect(permitsClientAuth((await issueServerCert(signing, { hosts: ['both'] })).certPem)).toBe(true);
  });

  it('is false when the extendedKeyUsage extension is there but cannot be decoded', async () => {
    const keys = await generateEcKeyPair();
    for (const value of [new Uint8Array([1, 2, 3]), new Uint8Array([0x30, 0x03, 0x02, 0x01, 0x05])]) {
      const cert = await signCertificate(signing, {
        subjectCn: 'garbled purpose',
        publicKey: keys.publicKey,
        validityDays: 1,
        extensions: [new x509.Extension('2.5.29.37', false, value)],
      });
      expect(permitsClientAuth(pemText(cert))).toBe(false);
    }
  });
});
