import { connect as netConnect, isIP, isIPv4, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { buildConnector } from 'undici';
import { createHttpsClient, type ClientOptions, type HttpsClient } from './https-client.js';

/**
 * What a TCP proxy in front of the controller writes (HAProxy's PROXY protocol), built by hand
 * so that tests can send valid, split, forged or broken headers over real sockets.
 */
export const V2_SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

function ipBytes(address: string): Buffer {
  if (isIPv4(address)) return Buffer.from(address.split('.').map(Number));
  const [head, tail = ''] = address.split('::') as [string, string?];
  const groups = (s: string) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = groups(head);
  const t = address.includes('::') ? groups(tail) : [];
  const all = [...h, ...Array(8 - h.length - t.length).fill(0), ...t];
  const b = Buffer.alloc(16);
  all.forEach((g, i) => b.writeUInt16BE(g, i * 2));
  return b;
}

/** A v2 PROXY (or LOCAL) header for a TCP connection from `source`. */
export function proxyV2(source?: { address: string; port: number }): Buffer {
  if (!source) return Buffer.concat([V2_SIGNATURE, Buffer.from([0x20, 0x00, 0x00, 0x00])]);
  const v4 = isIPv4(source.address);
  const src = ipBytes(source.address);
  const dst = ipBytes(v4 ? '127.0.0.1' : '::1');
  const ports = Buffer.alloc(4);
  ports.writeUInt16BE(source.port, 0);
  ports.writeUInt16BE(443, 2);
  const body = Buffer.concat([src, dst, ports]);
  const head = Buffer.from([0x21, v4 ? 0x11 : 0x21, 0, body.length]);
  return Buffer.concat([V2_SIGNATURE, head, body]);
}

export function proxyV1(source: { address: string; port: number }): Buffer {
  const v4 = isIPv4(source.address);
  return Buffer.from(
    `PROXY ${v4 ? 'TCP4' : 'TCP6'} ${source.address} ${v4 ? '127.0.0.1' : '::1'} ${source.port} 443\r\n`,
  );
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ProxyHeaderOptions {
  /** Written before the TLS handshake, one TCP write per chunk. */
  chunks: Buffer[];
  /** Pause between chunks, so that they arrive as separate segments. */
  chunkDelayMs?: number;
  localAddress?: string;
}

/** Opens a TCP connection to `host:port` and writes the chunks, the last one together with the first TLS bytes. */
export async function connectWithPreamble(
  host: string,
  port: number,
  o: ProxyHeaderOptions,
): Promise<Socket> {
  const raw = netConnect({ host, port, localAddress: o.localAddress });
  raw.setNoDelay(true);
  await new Promise<void>((resolve, reject) => {
    raw.once('connect', resolve);
    raw.once('error', reject);
  });
  const chunks = o.chunks.filter((c) => c.length > 0);
  for (const [i, chunk] of chunks.entries()) {
    if (i === chunks.length - 1) raw.cork();
    raw.write(chunk);
    if (i < chunks.length - 1 && o.chunkDelayMs) await pause(o.chunkDelayMs);
  }
  // The ClientHello joins the corked last chunk in one segment.
  process.nextTick(() => raw.uncork());
  return raw;
}

/**
 * An HTTPS client (https-client.ts) whose every connection starts with the given PROXY header,
 * as if a proxy had accepted it; the TLS session is still the client's own (certificates work).
 */
export function clientBehindHeader(
  baseUrl: string,
  options: ClientOptions & { header: () => Buffer[]; chunkDelayMs?: number },
): HttpsClient {
  const connector: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname;
    connectWithPreamble(host, Number(opts.port), {
      chunks: options.header(),
      chunkDelayMs: options.chunkDelayMs,
      localAddress: options.localAddress,
    }).then(
      (raw) => {
        const tls = tlsConnect({
          socket: raw,
          ca: options.ca,
          cert: options.cert,
          key: options.key,
          host,
          servername: isIP(host) ? undefined : host,
        });
        tls.once('secureConnect', () => callback(null, tls));
        tls.once('error', (err) => callback(err, null));
      },
      (err: Error) => callback(err, null),
    );
  };
  return createHttpsClient(baseUrl, { ...options, connector });
}

/** Resolves when the peer closes `socket` (or it errors), with the bytes it sent first. */
export function closedByPeer(socket: Socket): Promise<Buffer> {
  const received: Buffer[] = [];
  socket.on('data', (d: Buffer) => received.push(d));
  return new Promise((resolve) => {
    socket.once('close', () => resolve(Buffer.concat(received)));
    socket.once('error', () => undefined);
  });
}
