import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import { isIP } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import { pemBlocks } from '../crypto/pem-blocks.js';
import { CliError } from './cli-error.js';

/**
 * The only places the CLI talks TLS without verifying the server: the first contact of
 * `svc enroll` (trust then comes from the signed JWT) and `svc login --yes` (the user accepts it).
 */

const TIMEOUT_MS = 10_000;

function endpoint(url: URL) {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  // SNI carries host names only (RFC 6066 §3); Node warns when given an IP literal.
  return { host, port: Number(url.port || 443), servername: isIP(host) ? undefined : host };
}

/** The certificate the server at `url` presents, fetched without verifying it. */
export function fetchServerLeaf(url: URL): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = connect({ ...endpoint(url), rejectUnauthorized: false }, () => {
      const leaf = socket.getPeerX509Certificate();
      socket.end();
      if (leaf) resolve(leaf);
      else reject(new CliError(`${url.origin} presented no certificate`));
    });
    socket.setTimeout(TIMEOUT_MS, () => socket.destroy(new Error('timed out')));
    socket.on('error', (err) => reject(new CliError(`cannot reach ${url.origin}: ${err.message}`)));
  });
}

/**
 * GET over unverified TLS. With `pinnedLeaf`, the answer is used only if the server presented
 * exactly that certificate: the one whose key signed the enrollment JWT.
 */
export function getWithoutVerification(
  url: URL,
  accept: string,
  pinnedLeaf?: X509Certificate,
): Promise<{ text: string; leaf: X509Certificate | undefined }> {
  return new Promise((resolve, reject) => {
    const fail = (message: string) => reject(new CliError(message));
    const req = request(
      { ...endpoint(url), path: url.pathname + url.search, headers: { accept }, rejectUnauthorized: false },
      (res) => {
        const leaf = (res.socket as TLSSocket).getPeerX509Certificate();
        if (pinnedLeaf && leaf?.fingerprint256 !== pinnedLeaf.fingerprint256) {
          res.destroy();
          return fail(`${url.origin} changed its certificate between two connections: refusing to trust it`);
        }
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve({ text, leaf })
            : fail(`${url.href} answered HTTP ${res.statusCode ?? '?'}`),
        );
      },
    );
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error('timed out')));
    req.on('error', (err) => fail(`cannot reach ${url.origin}: ${err.message}`));
    req.end();
  });
}

/**
 * Splits a PEM bundle into certificates; an empty or unparseable bundle is an error. No bound on
 * the count: a CA file may be a system trust store, and parsing is linear in its size.
 */
export function parsePemBundle(pem: string, what: string): X509Certificate[] {
  const blocks = pemBlocks(pem, 'CERTIFICATE', Number.POSITIVE_INFINITY);
  if (blocks.length === 0) throw new CliError(`${what} holds no PEM certificate`);
  try {
    return blocks.map((block) => new X509Certificate(block.der));
  } catch {
    throw new CliError(`${what} holds a certificate that cannot be parsed`);
  }
}
