import { randomBytes } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import type { Context, Next } from 'koa';

/** The line a baseline prints once it accepts connections; the bench reads the port from it. */
export const READY_LINE = /^baseline ready on port (\d+)$/;

export function requiredEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (baselines are started by bench/run.ts)`);
  return value;
}

/**
 * The response headers the service sets on every API response (src/middleware/security-headers.ts
 * and the request id): a baseline that sent fewer bytes per response would look faster for it.
 */
export async function serviceLikeHeaders(ctx: Context, next: Next) {
  ctx.set('strict-transport-security', 'max-age=31536000');
  ctx.set('x-content-type-options', 'nosniff');
  ctx.set('x-frame-options', 'DENY');
  ctx.set('referrer-policy', 'no-referrer');
  ctx.set('cache-control', 'no-store');
  ctx.set('request-id', randomBytes(9).toString('base64url'));
  return next();
}

/**
 * HTTPS on 127.0.0.1 with an ephemeral port and the service's server options
 * (src/listeners/https-listeners.ts): TLS 1.2+, a client certificate asked for but not
 * required, the same keep-alive and header timeouts. The app is built once the port is known
 * (an issuer names its port). Stops on SIGTERM.
 */
export async function serveBaseline(build: (origin: string) => Koa | Promise<Koa>): Promise<void> {
  const server = createServer({
    key: requiredEnv('BENCH_TLS_KEY'),
    cert: requiredEnv('BENCH_TLS_CERT'),
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: 'TLSv1.2',
    joinDuplicateHeaders: true,
    keepAliveTimeout: 5000,
    requestTimeout: 30_000,
    headersTimeout: 20_000,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const app = await build(`https://127.0.0.1:${port}`);
  server.on('request', app.callback());
  process.once('SIGTERM', () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
  process.stdout.write(`baseline ready on port ${port}\n`);
}
