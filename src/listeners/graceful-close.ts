import type { Server } from 'node:https';
import type { Logger } from 'pino';
import type { RequestSwitch } from './request-switch.js';

export interface ServedServer {
  server: Server;
  requests: RequestSwitch;
}

export interface GracefulCloseOptions {
  servers: readonly ServedServer[];
  /** Answers every request still waiting (the response deadline's `expireAll`). */
  expirePending: () => void;
  /** How long requests in flight may take; then they are answered 503 and connections dropped. */
  graceMs: number;
  /**
   * true: an idle kept-alive connection stays open until its keep-alive timeout, and a request
   * that arrives on it meanwhile is answered (503, `Connection: close`). Closing it at once races
   * with a client that is sending on it right now: its request would be lost, not answered.
   * false: idle connections are closed at once (tests, a failed start).
   */
  keepIdleConnections: boolean;
  logger?: Logger;
}

const sleep = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, ms).unref();
  });

/**
 * Stops the listeners without dropping a request: no new connection is accepted, every request
 * already received is answered, then the connections close. Resolves within `graceMs`.
 */
export async function closeGracefully(options: GracefulCloseOptions): Promise<void> {
  const { servers, graceMs, logger } = options;
  // Requests that arrive from now on (on connections that were already open) get 503 "stopping".
  for (const { requests } of servers) requests.stop();
  const closed = Promise.all(
    servers.map(
      ({ server }) =>
        new Promise<void>((resolve) => {
          if (!options.keepIdleConnections) return void server.close(() => resolve());
          // `close()` stops listening (through whatever accepts the connections: the server
          // itself or a PROXY protocol front), stops the connection-checking timer and waits for
          // the connections, but Node's HTTPS close first drops the idle kept-alive ones, through
          // this very method.
          const closeIdle = server.closeIdleConnections;
          server.closeIdleConnections = () => undefined;
          try {
            server.close(() => resolve());
          } finally {
            server.closeIdleConnections = closeIdle;
          }
        }),
    ),
  );
  const flushMs = Math.min(1000, graceMs / 4);
  const drained = await Promise.race([closed.then(() => true), sleep(graceMs - flushMs).then(() => false)]);
  if (!drained) {
    const waiting = servers.reduce((n, s) => n + s.requests.inFlight(), 0);
    logger?.warn({ requests: waiting, graceMs }, 'shutdown grace period ending: answering what is left 503');
    options.expirePending();
    await Promise.race([closed, sleep(flushMs)]);
    for (const { server } of servers) server.closeAllConnections();
  }
}
