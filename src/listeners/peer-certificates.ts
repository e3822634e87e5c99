import type { PeerCertificate, DetailedPeerCertificate, TLSSocket } from 'node:tls';
import type { Context } from 'koa';

// A real chain is a handful of certificates; the bound keeps a hostile peer from making us walk far.
const MAX_CHAIN = 10;

const hasRaw = (c: PeerCertificate | undefined): c is DetailedPeerCertificate =>
  c !== undefined && c !== null && Buffer.isBuffer((c as PeerCertificate).raw);

/**
 * The client certificate chain presented in the TLS handshake, DER, leaf first; empty when the
 * client sent none. The listener asks for but does not verify client certificates
 * (https-listeners.ts), so whoever reads this checks the chain against the CA it trusts.
 * Node links `issuerCertificate` up to a self-issued certificate, which points at itself.
 */
export function peerCertificateChain(ctx: Context): Buffer[] {
  const socket = ctx.req.socket as TLSSocket;
  if (typeof socket.getPeerCertificate !== 'function') return [];
  let cert: PeerCertificate | undefined = socket.getPeerCertificate(true);
  const chain: Buffer[] = [];
  const seen = new Set<string>();
  while (hasRaw(cert) && chain.length < MAX_CHAIN) {
    const key = cert.raw.toString('base64');
    if (seen.has(key)) break;
    seen.add(key);
    chain.push(cert.raw);
    const issuer: DetailedPeerCertificate | undefined = cert.issuerCertificate;
    if (issuer === cert) break;
    cert = issuer;
  }
  return chain;
}
