import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { generateRootCa, issueServerCert, type KeyedCert } from '../../src/crypto/pki.js';

/** A test CA and a receiver certificate it signed for 127.0.0.1, ::1 and receiver.test. */
export async function receiverPki(hosts = ['127.0.0.1', '::1', 'receiver.test']) {
  const ca = await generateRootCa({ commonName: 'Webhook Receiver Test CA' });
  const leaf = await issueServerCert(ca, { hosts });
  return { ca, leaf };
}

export interface Hit {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** The SNI the client sent; false (or null) when it sent none. */
  servername: string | false | null;
}

export type ReceiverHandler = (req: IncomingMessage, res: ServerResponse, hit: Hit) => void;

export interface Receiver {
  port: number;
  /** `https://127.0.0.1:<port><path>`, or with `host` in place of 127.0.0.1. */
  url(path?: string, host?: string): string;
  /** TCP connections accepted so far. */
  connections(): number;
  hits: Hit[];
  close(): Promise<void>;
}

/** A real HTTPS receiver on 127.0.0.1 that records every request; answers 204 unless `handle` does. */
export async function startReceiver(leaf: KeyedCert, handle?: ReceiverHandler): Promise<Receiver> {
  const hits: Hit[] = [];
  let connections = 0;
  const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const hit: Hit = {
        method: req.method!,
        path: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        servername: (req.socket as TLSSocket).servername,
      };
      hits.push(hit);
      if (handle) handle(req, res, hit);
      else res.writeHead(204).end();
    });
  });
  server.on('connection', () => (connections += 1));
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (path = '/hook', host = '127.0.0.1') => `https://${host}:${port}${path}`,
    connections: () => connections,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface TcpRecorder {
  port: number;
  /** Connections accepted and bytes received on them, so far. */
  connections(): number;
  bytes(): number;
  close(): Promise<void>;
}

/**
 * A plain TCP server on 127.0.0.1 that only counts what arrives: a proxy that must not be used,
 * or a peer that must not see a single byte. `onConnection` may answer (a hostile receiver).
 */
export async function startTcpRecorder(onConnection?: (socket: Socket) => void): Promise<TcpRecorder> {
  let connections = 0;
  let bytes = 0;
  const open = new Set<Socket>();
  const server = createTcpServer((socket) => {
    connections += 1;
    open.add(socket);
    socket.on('data', (d: Buffer) => (bytes += d.length));
    socket.on('error', () => undefined);
    socket.on('close', () => open.delete(socket));
    onConnection?.(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    connections: () => connections,
    bytes: () => bytes,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
