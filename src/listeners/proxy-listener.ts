import { BlockList, createServer, isIPv4, type Socket } from 'node:net';
import type { Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { cidrProblem, mappedIPv4, parseCidr } from '../config/cidr.js';
import { clientAddressKey } from '../services/auth/client-address-key.js';
import { createLogThrottle } from './log-throttle.js';
import { parseProxyHeader, startsLikeProxyHeader, type ProxyHeader } from './proxy-protocol.js';

export interface ProxyProtocolOptions {
  /** Addresses (CIDR) whose connections must start with a PROXY header; nobody else may send one. */
  trustedFrom: string[];
  /** How long a trusted peer may take to send its whole header. */
  headerTimeoutMs?: number;
  /**
   * The handshake timeout, counted from accept: by then every peer has sent its header (if it is
   * a trusted proxy) and finished its TLS handshake, or is closed. It also bounds the wait for the
   * first bytes (the ClientHello) of any other peer.
   */
  handshakeTimeoutMs: number;
  logger?: Logger;
}

// A proxy writes the header together with, or right before, the client's first bytes.
const HEADER_TIMEOUT_MS = 5_000;
// A peer refused on every connection would otherwise write a warning per connection.
const WARNING_INTERVAL_MS = 60_000;

/**
 * The source a connection's PROXY header named: a ProxyHeader source, or null for "keep the
 * socket's own address" (LOCAL, or no header because the peer is not a trusted proxy). Every
 * socket handed to the HTTPS server carries it; one without it was never screened.
 */
const kSource = Symbol('svc.proxyProtocolSource');
/** The timer that closes the connection unless its TLS handshake is done in time. */
const kHandshakeDeadline = Symbol('svc.handshakeDeadline');
type Screened = Socket & {
  [kSource]?: ProxyHeader['source'] | null;
  [kHandshakeDeadline]?: NodeJS.Timeout;
};

/**
 * One list per family, each checked only with peers of its own family. Node's BlockList matches
 * across families (an IPv6 rule such as ::/8 holds every IPv4 peer as ::ffff:a.b.c.d), so one
 * shared list would let a broad IPv6 range trust every IPv4 client. A dual-stack socket reports
 * IPv4 peers as ::ffff:a.b.c.d; they are checked as the IPv4 address they are.
 */
interface TrustList {
  check(peer: string): boolean;
}

function trustList(cidrs: string[]): TrustList {
  const lists = { ipv4: new BlockList(), ipv6: new BlockList() };
  for (const text of cidrs) {
    const cidr = parseCidr(text);
    if (!cidr) throw new Error(`proxyProtocol.trustedFrom: ${text} ${cidrProblem(text) ?? 'is not usable'}`);
    lists[cidr.type].addSubnet(cidr.network, cidr.prefix, cidr.type);
  }
  return {
    check(peer) {
      const address = mappedIPv4(peer) ?? peer;
      const type = isIPv4(address) ? 'ipv4' : 'ipv6';
      return lists[type].check(address, type);
    },
  };
}

/**
 * Listens on `host:port` with a plain TCP server that reads the PROXY protocol header of every
 * connection from a trusted address before any TLS byte, then hands the socket, with the bytes
 * after the header put back, to `server` (which does the TLS handshake as usual, so client
 * certificates still reach us). Connections from other addresses are handed over untouched unless
 * they start with a PROXY signature, which closes them. From then on the socket's
 * `remoteAddress`/`remotePort` are the client's, so that everything reading the client address
 * (Koa's `ctx.ip`: rate limits, lockout counting, logs, audit events) sees the real client.
 * Resolves with the bound port.
 */
export async function listenWithProxyProtocol(
  server: Server,
  host: string,
  port: number,
  options: ProxyProtocolOptions,
): Promise<number> {
  const trusted = trustList(options.trustedFrom);
  const headerTimeoutMs = options.headerTimeoutMs ?? HEADER_TIMEOUT_MS;
  const { handshakeTimeoutMs } = options;
  const log = options.logger;
  const pending = new Set<Socket>();
  const warnings = createLogThrottle({ intervalMs: WARNING_INTERVAL_MS });

  const refuse = (socket: Socket, peer: string, reason: string, quiet = false) => {
    socket.destroy();
    if (!log) return;
    if (quiet) return log.debug({ peer, reason }, 'connection closed before its PROXY header');
    // Keyed like the rate limits: a host holding a whole IPv6 /64 cannot fill the table alone.
    const admitted = warnings.admit(clientAddressKey(peer));
    if (!admitted) return;
    const { suppressed, untracked } = admitted;
    log.warn(
      { peer, reason, ...(suppressed > 0 && { suppressed }), ...(untracked && { untracked }) },
      'connection refused: PROXY protocol',
    );
  };
  const handOver = (socket: Screened, source: ProxyHeader['source'] | null, rest: Buffer) => {
    pending.delete(socket);
    socket.pause();
    if (rest.length > 0) socket.unshift(rest);
    socket[kSource] = source;
    server.emit('connection', socket);
  };

  const readHeader = (socket: Screened, peer: string) => {
    let received: Buffer = Buffer.alloc(0);
    const timer = setTimeout(() => refuse(socket, peer, 'no PROXY header in time'), headerTimeoutMs);
    socket.once('close', () => clearTimeout(timer));
    const onEnd = () => refuse(socket, peer, 'closed', received.length === 0);
    const onData = (chunk: Buffer) => {
      received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
      const parsed = parseProxyHeader(received);
      if (parsed.state === 'incomplete') return;
      clearTimeout(timer);
      socket.off('end', onEnd);
      socket.off('data', onData);
      if (parsed.state === 'invalid') return refuse(socket, peer, parsed.reason);
      handOver(socket, parsed.header.source ?? null, received.subarray(parsed.header.length));
    };
    socket.on('end', onEnd);
    socket.on('data', onData);
    socket.resume();
  };

  // Silence before the first byte is bounded by the handshake deadline set at accept.
  const screen = (socket: Screened, peer: string) => {
    socket.once('data', (chunk: Buffer) => {
      if (startsLikeProxyHeader(chunk)) return refuse(socket, peer, 'PROXY header from an untrusted address');
      handOver(socket, null, chunk);
    });
    socket.resume();
  };

  // noDelay as the HTTPS server sets it on the sockets it accepts itself.
  const front = createServer({ pauseOnConnect: true, noDelay: true }, (socket: Screened) => {
    const peer = socket.remoteAddress;
    if (!peer) return void socket.destroy();
    pending.add(socket);
    // One deadline for header and handshake together: the HTTPS server's own handshake timeout
    // starts afresh at the hand-over, so a peer that sent a byte just in time would otherwise get
    // up to twice as long.
    const deadline = setTimeout(() => socket.destroy(), handshakeTimeoutMs);
    socket[kHandshakeDeadline] = deadline;
    socket.once('close', () => clearTimeout(deadline));
    // Resets before or during the handshake are the peer's business, not an exception of ours.
    socket.on('error', () => socket.destroy());
    socket.once('close', () => pending.delete(socket));
    if (trusted.check(peer)) readHeader(socket, peer);
    else screen(socket, peer);
  });

  // Runs before the HTTP layer sees the socket, so no request ever reads the proxy's address.
  server.prependListener('secureConnection', (tlsSocket: TLSSocket) => {
    const raw = (tlsSocket as unknown as { _parent?: Screened })._parent;
    clearTimeout(raw?.[kHandshakeDeadline]);
    const source = raw?.[kSource];
    if (source === undefined) {
      log?.error('a connection reached TLS without PROXY screening; closed');
      return void tlsSocket.destroy();
    }
    if (source === null) return;
    Object.defineProperties(tlsSocket, {
      remoteAddress: { value: source.address },
      remotePort: { value: source.port },
      remoteFamily: { value: source.family },
    });
  });
  server.once('close', () => {
    front.close();
    for (const socket of pending) socket.destroy();
  });
  // The HTTPS server counts no connections of its own (they were accepted by `front`), so its
  // close() would report "closed" at once; closing waits for front's connections instead, as it
  // would for a server that listened itself.
  const closeHttps = server.close.bind(server);
  server.close = ((callback?: (err?: Error) => void) => {
    closeHttps();
    front.close(() => callback?.());
    return server;
  }) as Server['close'];
  front.on('error', (err) => log?.error({ err }, 'PROXY protocol listener error'));

  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(port, host, () => {
      front.off('error', reject);
      resolve();
    });
  });
  // The HTTPS server never listens itself; this starts its connection tracking (idle and
  // request timeouts, closeIdleConnections) exactly as listen() would.
  server.emit('listening');
  return (front.address() as { port: number }).port;
}
