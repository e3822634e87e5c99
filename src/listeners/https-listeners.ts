import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { cipherString } from '../config/tls-ciphers.js';
import type { PkiMaterial } from '../services/pki-service.js';
import { listenWithProxyProtocol, type ProxyProtocolOptions } from './proxy-listener.js';
import type { RequestHandler } from './request-switch.js';

export interface ListenOptions {
  /** Attached before the port is bound: no request may find the server without a handler. */
  onRequest: RequestHandler;
  /** A client that has not finished the TLS handshake by then is dropped. */
  handshakeTimeoutMs: number;
  /** The cipher suites offered, TLS 1.3 and 1.2; default: the AEAD-only list of config/tls-ciphers.ts. */
  ciphers?: string;
  /**
   * `server.responseDeadline`: a connection on which nothing is read or written for 10 s longer
   * is closed, so a slow handler still gets its 503 out first.
   */
  responseDeadlineMs: number;
  /** Connections start with a PROXY protocol header (proxy-listener.ts). */
  proxyProtocol?: Omit<ProxyProtocolOptions, 'handshakeTimeoutMs'>;
}

export interface BoundServer {
  server: Server;
  /** The `host:port` asked for, and the port actually bound (differs for port 0). */
  requested: string;
  port: number;
}

// How much longer than the response deadline a connection may stand still.
const INACTIVITY_MARGIN_MS = 10_000;

const splitHostPort = (hp: string) => {
  const i = hp.lastIndexOf(':');
  return { host: hp.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(hp.slice(i + 1)) };
};

/**
 * One HTTPS server per interface. TLS asks for, but does not require, a client certificate so
 * that certificate login works; verification is ours. Repeated `Authorization` headers are kept
 * (joined with ", "): a request may carry our token and a secondary external JWT in two headers.
 */
export async function listenHttps(
  iface: string,
  pki: PkiMaterial,
  options: ListenOptions,
): Promise<BoundServer> {
  const server = createServer({
    key: pki.server.keyPem,
    cert: pki.server.certPem,
    ca: pki.caCertsPem,
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: 'TLSv1.2',
    // Not Node's default list: it offers CBC suites on TLS 1.2 (docs/operations.md, TLS).
    ciphers: options.ciphers ?? cipherString(),
    joinDuplicateHeaders: true,
    keepAliveTimeout: 5000,
    requestTimeout: 30_000,
    headersTimeout: 20_000,
    // Node enforces the two limits above only when it sweeps its connections (every 30 s by
    // default), so a stalled request could otherwise wait almost twice as long for its 408.
    connectionsCheckingInterval: 2_000,
    handshakeTimeout: options.handshakeTimeoutMs,
  });
  server.on('request', options.onRequest);
  // A connection keeps the client certificate of its handshake: certificate-bound tokens are
  // checked against it once per connection (crypto/connection-certificate.ts). TLS 1.3 has
  // no renegotiation; this refuses it on TLS 1.2, where it could present another certificate.
  server.on('secureConnection', (socket: TLSSocket) => socket.disableRenegotiation());
  // None of the limits above covers waiting to write: a client that pipelines requests for large
  // answers and never reads would hold its connection, and the answers buffered for it, forever.
  // Node's socket timeout counts reads and writes alike (a write still in progress that moved
  // since it was issued gets one more period, so a stalled one is closed within twice the
  // timeout); once TLS is up it replaces the handshake timeout, and between requests the
  // keep-alive timeout replaces it. Closed explicitly rather than left to Node's default, which
  // a 'timeout' listener on a request or response would turn off.
  server.setTimeout(options.responseDeadlineMs + INACTIVITY_MARGIN_MS, (socket) => socket.destroy());
  const { host, port } = splitHostPort(iface);
  if (options.proxyProtocol) {
    // The front counts the handshake timeout from accept, across the PROXY header and TLS.
    const bound = await listenWithProxyProtocol(server, host, port, {
      ...options.proxyProtocol,
      handshakeTimeoutMs: options.handshakeTimeoutMs,
    });
    return { server, requested: iface, port: bound };
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, requested: iface, port: (server.address() as AddressInfo).port };
}

/** `localhost:0` becomes `localhost:<bound port>` once the interface with port 0 is bound. */
export function withBoundPort(address: string, bound: BoundServer[]): string {
  const { host, port } = splitHostPort(address);
  if (port !== 0) return address;
  const match = bound.find((b) => splitHostPort(b.requested).port === 0);
  return match ? `${address.slice(0, address.lastIndexOf(':'))}:${match.port}` : `${host}:${port}`;
}

export { splitHostPort };
