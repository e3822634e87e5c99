import type { ClientRequest, ClientRequestArgs, IncomingMessage } from 'node:http';
import { Agent, request } from 'node:https';
import { isIP, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import * as tls from 'node:tls';
import { outboundErrorMessage } from './outbound-error.js';
import {
  guardConnectedAddress,
  pinnedLookup,
  systemResolver,
  type ResolveHost,
} from './target-address-guard.js';
import { webhookUrlProblem } from './webhook-target.js';

/** What one delivery attempt got back. */
export interface OutboundResponse {
  status: number;
  /** At most the first 64 KiB of the body were read; the rest was discarded. */
  bodyPreview: string;
  durationMs: number;
}

export interface OutboundPostOptions {
  /** webhooks.allowPrivateTargets */
  allowPrivateTargets: boolean;
  /** PEM certificates trusted in addition to the system trust store (webhooks.ca). */
  extraCa?: string;
  /** Connecting, the TLS handshake, the request and the whole response together; 10 s by default. */
  timeoutMs?: number;
  /** Bytes of the response body read at most, 64 KiB by default; the connection is closed then. */
  maxResponseBytes?: number;
  /** Resolves host names; the system resolver unless a test passes its own. */
  resolve?: ResolveHost;
}

/**
 * POSTs `body` to `url` with `headers`. Resolves with the response (any status); rejects with an
 * Error whose message says why no response came (refused target, timeout, TLS, connection).
 */
export type OutboundPost = (
  url: string,
  body: string,
  headers: Record<string, string>,
) => Promise<OutboundResponse>;

const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * One connection for one request, the address checked when it connects. An agent of its own also
 * keeps the request off the global agent, the one `NODE_USE_ENV_PROXY` points at a proxy.
 */
class GuardedAgent extends Agent {
  constructor(private readonly allowPrivateTargets: boolean) {
    super({ keepAlive: false, maxSockets: 1 });
  }

  override createConnection(
    options: ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const socket = super.createConnection(options, callback);
    // https.Agent connects with tls.connect, whose TLSSocket is a net.Socket.
    if (!(socket instanceof Socket)) {
      socket?.destroy();
      throw new Error('webhook connection is not a socket');
    }
    const host = options.host ?? '';
    guardConnectedAddress(socket, this.allowPrivateTargets, isIP(host.replace(/^\[(.*)\]$/, '$1')) !== 0);
    return socket;
  }
}

/**
 * The certificates receivers are verified against: `ca` replaces Node's default store, so the
 * extra ones are added to that store (system certificates too when Node is told to use them).
 */
function trustedCas(extraCa: string | undefined): string[] | undefined {
  if (!extraCa) return undefined;
  const defaults =
    typeof tls.getCACertificates === 'function'
      ? tls.getCACertificates('default')
      : [...tls.rootCertificates];
  return [...defaults, extraCa];
}

const seconds = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`);

/**
 * The HTTPS POST of webhook deliveries (docs/adr/0015-audit-events-and-webhooks.md): https only,
 * no redirects followed (a 3xx is a response like any other), one deadline for everything, at
 * most `maxResponseBytes` of the body read, proxy variables ignored, and unless
 * `allowPrivateTargets` no connection to a private or otherwise internal address, judged on the
 * address the socket connects to.
 */
export function createOutboundPost(options: OutboundPostOptions): OutboundPost {
  const allow = options.allowPrivateTargets;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const lookup = pinnedLookup(options.resolve ?? systemResolver, allow);
  const ca = trustedCas(options.extraCa);

  return (url, body, headers) =>
    new Promise<OutboundResponse>((resolve, reject) => {
      const started = performance.now();
      const problem = webhookUrlProblem(url, allow);
      if (problem) {
        reject(new Error(`target URL ${problem}`));
        return;
      }
      const target = new URL(url);
      const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
      const agent = new GuardedAgent(allow);
      let req: ClientRequest | undefined;
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req?.destroy();
        agent.destroy();
        outcome();
      };
      // No `cause`: a parser error carries the receiver's raw bytes, which no log may show.
      const fail = (err: unknown) => settle(() => reject(new Error(outboundErrorMessage(err))));
      const timer = setTimeout(
        () => settle(() => reject(new Error(`timed out after ${seconds(timeoutMs)}`))),
        timeoutMs,
      );

      const onResponse = (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        const done = () =>
          settle(() =>
            resolve({
              status: res.statusCode ?? 0,
              bodyPreview: Buffer.concat(chunks).toString('utf8'),
              durationMs: Math.round(performance.now() - started),
            }),
          );
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          const room = maxBytes - kept;
          chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
          kept += Math.min(chunk.length, room);
          // Enough read: the rest is never asked for, the socket closes with the request.
          if (kept >= maxBytes) done();
        });
        res.on('end', done);
        res.on('error', fail);
      };

      try {
        req = request(
          {
            method: 'POST',
            hostname: host,
            port: target.port || 443,
            path: `${target.pathname}${target.search}`,
            headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
            agent,
            lookup,
            // SNI names a host, never an address (RFC 6066 §3); the certificate is checked
            // against the URL's host either way.
            servername: isIP(host) ? '' : host.replace(/\.$/, ''),
            ...(ca ? { ca } : {}),
            // Explicit, so NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment cannot turn it off.
            rejectUnauthorized: true,
            insecureHTTPParser: false,
          },
          onResponse,
        );
      } catch (err) {
        fail(err);
        return;
      }
      req.on('error', fail);
      req.end(body);
    });
}
