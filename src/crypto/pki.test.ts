import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  generateRootCa,
  generateSigningCa,
  issueClientCert,
  issueServerCert,
  type KeyedCert,
} from './pki.js';
import { x509 } from './x509-runtime.js';

const DAY_MS = 24 * 60 * 60 * 1000;
let dir: string;
let root: KeyedCert;
let signing: KeyedCert;

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

/** `openssl verify` as a second, independent implementation of RFC 5280 path validation. */
function opensslVerify(leafPem: string, purpose: string, untrusted?: string): string {
  const args = ['verify', '-CAfile', file('root.pem', root.certPem), '-purpose', purpose];
  if (untrusted) args.push('-untrusted', file('untrusted.pem', untrusted));
  return execFileSync('openssl', [...args, file('leaf.pem', leafPem)], { stdio: 'pipe' }).toString();
}

const days = (from: Date, to: Date): number => (to.getTime() - from.getTime()) / DAY_MS;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pki-test-'));
  root = await generateRootCa({ commonName: 'Test Root' });
  signing = await generateSigningCa(root, { commonName: 'Test Signing CA' });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('generateRootCa', () => {
  it('creates a self-signed CA limited to signing certificates and CRLs', async () => {
    const cert = new x509.X509Certificate(root.certPem);
    const constraints = cert.getExtension(x509.BasicConstraintsExtension);
    expect(cert.subject).toBe('CN=Test Root');
    expect(await cert.isSelfSigned()).toBe(true);
    expect(constraints?.ca).toBe(true);
    expect(constraints?.critical).toBe(true);
    expect(constraints?.pathLength).toBeUndefined();
    expect(cert.getExtension(x509.KeyUsagesExtension)?.usages).toBe(
      x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
    );
  });

  it('returns a PKCS#8 key that node loads and that matches the certificate', () => {
    const key = createPrivateKey(root.keyPem);
    expect(root.keyPem.startsWith('-----BEGIN PRIVATE KEY-----\n')).toBe(true);
    expect(key.asymmetricKeyType).toBe('ec');
    expect(new X509Certificate(root.certPem).checkPrivateKey(key)).toBe(true);
  });

  it('is valid for ten years from a few minutes ago', () => {
    const cert = new x509.X509Certificate(root.certPem);
    const skewMs = Date.now() - cert.notBefore.getTime();
    expect(skewMs).toBeGreaterThan(60_000);
    expect(skewMs).toBeLessThan(10 * 60_000);
    expect(Math.round(days(new Date(), cert.notAfter))).toBe(3650);
  });

  it('gets a positive 16-byte random serial number', async () => {
    const other = await generateRootCa({ commonName: 'Test Root' });
    const serial = new x509.X509Certificate(root.certPem).serialNumber;
    expect(serial).toMatch(/^[0-7][0-9a-f]{31}$/i);
    expect(new x509.X509Certificate(other.certPem).serialNumber).not.toBe(serial);
  });
});

describe('generateSigningCa', () => {
  it('creates an intermediate CA with path length 0 that openssl verifies against the root', () => {
    const cert = new x509.X509Certificate(signing.certPem);
    expect(cert.issuer).toBe('CN=Test Root');
    expect(cert.getExtension(x509.BasicConstraintsExtension)?.pathLength).toBe(0);
    expect(opensslVerify(signing.certPem, 'any')).toContain(': OK');
  });

  it('is valid for five years by default', () => {
    expect(Math.round(days(new Date(), new x509.X509Certificate(signing.certPem).notAfter))).toBe(1825);
  });

  it('refuses a CA key that does not belong to the CA certificate', async () => {
    const other = await generateRootCa({ commonName: 'Other Root' });
    const mixed = { certPem: root.certPem, keyPem: other.keyPem };
    await expect(generateSigningCa(mixed, { commonName: 'x' })).rejects.toThrow(/does not match/);
  });

  it('refuses to let a leaf certificate act as an issuer', async () => {
    const leaf = await issueClientCert(signing, { commonName: 'leaf' });
    await expect(generateSigningCa(leaf, { commonName: 'x' })).rejects.toThrow(/not a CA/);
  });
});

describe('issueServerCert', () => {
  it('puts DNS names and IP addresses into the SAN and the first host into the CN', async () => {
    const server = await issueServerCert(signing, { hosts: ['localhost', '127.0.0.1', '::1', 'svc.test'] });
    const cert = new X509Certificate(server.certPem);
    expect(cert.subject).toBe('CN=localhost');
    expect(cert.subjectAltName).toBe(
      'DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, DNS:svc.test',
    );
    expect(cert.checkHost('svc.test')).toBe('svc.test');
    expect(cert.checkIP('::1')).toBe('::1');
  });

  it('is a one-year serverAuth leaf that openssl verifies through the signing CA', async () => {
    const server = await issueServerCert(signing, { hosts: ['localhost'] });
    const cert = new x509.X509Certificate(server.certPem);
    expect(cert.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false);
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages).toContain(
      x509.ExtendedKeyUsage.serverAuth,
    );
    expect(Math.round(days(new Date(), cert.notAfter))).toBe(365);
    expect(opensslVerify(server.certPem, 'sslserver', signing.certPem)).toContain(': OK');
  });

  it('rejects an empty host list', async () => {
    await expect(issueServerCert(signing, { hosts: [] })).rejects.toThrow(RangeError);
  });
});

describe('issueClientCert', () => {
  it('issues a clientAuth leaf that openssl accepts for TLS clients', async () => {
    const client = await issueClientCert(signing, { commonName: 'token-123' });
    const cert = new x509.X509Certificate(client.certPem);
    expect(cert.subject).toBe('CN=token-123');
    expect(cert.getExtension(x509.ExtendedKeyUsageExtension)?.usages).toEqual([
      x509.ExtendedKeyUsage.clientAuth,
    ]);
    expect(new X509Certificate(client.certPem).checkPrivateKey(createPrivateKey(client.keyPem))).toBe(true);
    expect(opensslVerify(client.certPem, 'sslclient', signing.certPem)).toContain(': OK');
  });

  it('issues an already expired certificate when notAfter is in the past', async () => {
    const notAfter = new Date(Date.now() - 2 * DAY_MS);
    const cert = new x509.X509Certificate(
      (await issueClientCert(signing, { commonName: 'old', notAfter })).certPem,
    );
    expect(cert.notAfter.getTime()).toBe(Math.floor(notAfter.getTime() / 1000) * 1000);
    expect(cert.notBefore.getTime()).toBeLessThan(cert.notAfter.getTime());
  });

  it('never outlives its issuer by default', async () => {
    const shortCa = await generateSigningCa(root, { commonName: 'Short CA', validityDays: 2 });
    const client = await issueClientCert(shortCa, { commonName: 'c' });
    expect(new x509.X509Certificate(client.certPem).notAfter).toEqual(
      new x509.X509Certificate(shortCa.certPem).notAfter,
    );
  });

  it('issues from a third-party RSA CA whose key openssl wrote', async () => {
    const keyPath = join(dir, 'rsa-ca.key');
    const certPath = join(dir, 'rsa-ca.pem');
    const caExtensions = [
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
    ];
    const newCa = 'req -x509 -newkey rsa:2048 -noenc -days 30'.split(' ');
    const args = [
      ...newCa,
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-subj',
      '/CN=Third Party RSA CA',
      ...caExtensions,
    ];
    execFileSync('openssl', args, { stdio: 'pipe' });
    const ca = { certPem: readFileSync(certPath, 'utf8'), keyPem: readFileSync(keyPath, 'utf8') };
    const client = await issueClientCert(ca, { commonName: 'third-party-client' });
    const out = execFileSync('openssl', ['verify', '-CAfile', certPath, file('tp.pem', client.certPem)]);
    expect(out.toString()).toContain(': OK');
    expect(new x509.X509Certificate(client.certPem).signatureAlgorithm.name).toBe('RSASSA-PKCS1-v1_5');
  });
});
