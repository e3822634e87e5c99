import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import Router from '@koa/router';
import { connect as tcpConnect } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import type { Server } from 'node:https';
import { pino } from 'pino';
import { buildKoaApp } from '../../src/listeners/build-koa-app.js';
import { listenHttps } from '../../src/listeners/https-listeners.js';
import { createResponseDeadline } from '../../src/listeners/response-deadline.js';
import { oauthErrors } from '../../src/middleware/oauth-errors.js';
import { createHttpsClient, type HttpsClient } from '../helpers/https-client.js';
import { proxyV2 } from '../helpers/proxy-header.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';

// Starting the controller (PGlite, migrations, PKI) takes far longer than jest's default on a loaded
// machine; every wait below has its own bound.
jest.setTimeout(180_000);

const MGMT = '/edge/management/v1';

/**
 * A never-answering handler cannot be reached in the controller (and must not be): these tests
 * serve the controller's own listener pieces (buildKoaApp with the deadline the configuration
 * sets, listenHttps, its PKI) around routes of their own.
 */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    env: {
      SVC_SERVER_RESPONSE_DEADLINE: '1s',
      SVC_SERVER_TLS_HANDSHAKE_TIMEOUT: '1s',
      SVC_SERVER_SHUTDOWN_GRACE_PERIOD: '2s',
    },
  });
});
afterAll(async () => {
  await server?.close();
});

describe('the response deadline', () => {
  let stuck: Server;
  let client: HttpsClient;
  const lines: Record<string, any>[] = [];
  let lateFinished: () => void;
  const late = new Promise<void>((resolve) => (lateFinished = resolve));

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const router = new Router();
    router.get('/never', (ctx) => {
      ctx.set('x-half-done', 'yes');
      return new Promise(() => undefined);
    });
    // Answers long after its deadline: what it writes then must go nowhere.
    router.get('/late', async (ctx) => {
      await new Promise((r) => setTimeout(r, 3000));
      ctx.status = 201;
      ctx.set('x-late', 'yes');
      ctx.body = { late: true };
      lateFinished();
    });
    // An OAuth endpoint that never answers, its path rewritten for the provider as /oidc's dispatch does.
    router.post('/oidc/token', (ctx) =>
      oauthErrors(ctx, () => {
        ctx.path = '/token';
        return new Promise(() => undefined);
      }),
    );
    router.get('/quick', (ctx) => {
      ctx.body = { quick: true };
    });
    const spec = {
      name: 'deadline-test',
      interfaces: ['127.0.0.1:0'],
      addresses: ['127.0.0.1:0'],
      apis: new Map(),
    };
    const deadline = createResponseDeadline(server.app.config.server.responseDeadline);
    const app = buildKoaApp(spec, { common: [router] }, { logger, responseDeadline: deadline.middleware });
    const bound = await listenHttps('127.0.0.1:0', server.app.pki, {
      onRequest: app.callback(),
      handshakeTimeoutMs: 10_000,
      responseDeadlineMs: 1_000,
    });
    stuck = bound.server;
    client = createHttpsClient(`https://127.0.0.1:${bound.port}`, { ca: server.ca });
  });

  afterAll(async () => {
    await client?.close();
    stuck?.closeAllConnections();
    await new Promise((r) => stuck?.close(r));
  });

  test('a handler that never answers gets 503 SERVICE_UNAVAILABLE at the deadline, logged with its request id', async () => {
    const res = await client.get('/never');
    expect(res.status).toBe(503);
    expect(res.header('retry-after')).toBe('1');
    expect(res.body).toEqual({
      error: {
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringContaining('in time'),
        requestId: res.header('request-id'),
      },
      meta: { apiVersion: '1' },
    });
    // What the handler had set is gone; what was set before it (security headers) stays.
    expect(res.header('x-half-done')).toBeUndefined();
    expect(res.header('cache-control')).toBe('no-store');
    const logged = lines.find((l) => l.msg === 'no response within the deadline: answered 503');
    expect(logged).toMatchObject({ requestId: res.header('request-id'), path: '/never', deadlineSeconds: 1 });
    expect(lines.find((l) => l.msg === 'request' && l.requestId === res.header('request-id'))).toMatchObject({
      status: 503,
    });
  });

  test('an OAuth endpoint past its deadline answers 503 in the RFC 6749 form, logged under the path the client asked for', async () => {
    const res = await client.post('/oidc/token', {
      form: { grant_type: 'refresh_token', refresh_token: 'x' },
    });
    expect(res.status).toBe(503);
    expect(res.header('retry-after')).toBe('1');
    expect(res.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
    const logged = lines.find(
      (l) =>
        l.msg === 'no response within the deadline: answered 503' && l.requestId === res.header('request-id'),
    );
    expect(logged).toMatchObject({ path: '/oidc/token' });
  });

  test('an answer that comes after the deadline is dropped; the connection keeps serving', async () => {
    const res = await client.get('/late');
    expect(res.status).toBe(503);
    await late;
    // The same kept-alive connection answers the next request normally.
    const next = await client.get('/quick');
    expect(next.status).toBe(200);
    expect(next.body).toEqual({ quick: true });
    expect(next.header('x-late')).toBeUndefined();
    await waitFor(
      () => lines.some((l) => l.msg === 'a request finished after its deadline; its answer was dropped'),
      {
        what: 'the late answer to be logged',
      },
    );
  });

  test('the controller with a short deadline answers its own routes as before', async () => {
    const res = await server.client.get('/health/ready');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    const unknown = await server.client.get(`${MGMT}/no-such-thing`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
  });
});

describe('connections that never finish', () => {
  test('a connection that never completes its TLS handshake is closed by the server', async () => {
    const port = Number(new URL(server.url).port);
    const socket = tcpConnect({ host: '127.0.0.1', port });
    let closed = false;
    socket.on('close', () => (closed = true));
    socket.on('error', () => undefined);
    // Node's own default would hold it for two minutes; the test gives up after 30 s.
    await waitFor(() => closed, { timeout: 30_000, what: 'the server to close the silent connection' });
    socket.destroy();
  });

  test('a client that pipelines large answers and never reads them is closed; others are served', async () => {
    // 300 × 70 KB is far more than the socket buffers of both ends hold, so the server is left
    // waiting to write; it renders only a few answers ahead (Node stops parsing pipelined
    // requests while the output is backed up).
    const count = 300;
    const reader = await pipelinedSpecsNeverRead(server.url, server.ca, count);
    try {
      // The response deadline (1 s) + 10 s without progress; Node lets a write that moved since
      // it was issued run one more period, so about 22 s here.
      await waitFor(reader.closedByServer, {
        timeout: 60_000,
        what: 'the server to close the stalled connection',
      });
      // It was closed with answers still unsent, not idle after sending them all.
      expect(await reader.answersReceived()).toBeLessThan(count);
    } finally {
      reader.destroy();
    }
    const res = await server.client.get(`${MGMT}/spec`);
    expect(res.status).toBe(200);
  });

  test('on a PROXY protocol listener, a silent peer that is no trusted proxy is closed at the handshake timeout', async () => {
    const bound = await listenHttps('127.0.0.1:0', server.app.pki, {
      onRequest: (_req, res) => res.end(),
      handshakeTimeoutMs: 1_000,
      responseDeadlineMs: 1_000,
      proxyProtocol: { trustedFrom: ['10.0.0.0/8'] },
    });
    try {
      const socket = tcpConnect({ host: '127.0.0.1', port: bound.port });
      let closed = false;
      socket.on('close', () => (closed = true));
      socket.on('error', () => undefined);
      // The listener's own wait for a first byte is 30 s; the handshake timeout is 1 s.
      await waitFor(() => closed, { timeout: 10_000, what: 'the listener to close the silent connection' });
      socket.destroy();
    } finally {
      await new Promise((r) => bound.server.close(r));
    }
  });

  test('on a PROXY protocol listener, the PROXY header and the TLS handshake share one deadline from accept', async () => {
    const bound = await listenHttps('127.0.0.1:0', server.app.pki, {
      onRequest: (_req, res) => res.end(),
      handshakeTimeoutMs: 4_000,
      responseDeadlineMs: 1_000,
      proxyProtocol: { trustedFrom: ['127.0.0.2/32'] },
    });
    /** Connects from `localAddress`, writes `first` at 3 s, then nothing; resolves when closed. */
    const lateStarter = async (localAddress: string, first: Buffer) => {
      const socket = tcpConnect({ host: '127.0.0.1', port: bound.port, localAddress });
      socket.on('error', () => undefined);
      await new Promise<void>((r) => socket.once('connect', () => r()));
      const connected = Date.now();
      let sentWhileOpen = false;
      setTimeout(() => {
        sentWhileOpen = !socket.destroyed;
        socket.write(first);
      }, 3_000);
      const closedAfter = await new Promise<number>((r) =>
        socket.once('close', () => r(Date.now() - connected)),
      );
      return { sentWhileOpen, closedAfter };
    };
    try {
      const tlsByte = Buffer.from([0x16]);
      const [untrusted, trusted] = await Promise.all([
        lateStarter('127.0.0.1', tlsByte),
        lateStarter('127.0.0.2', Buffer.concat([proxyV2({ address: '203.0.113.30', port: 1 }), tlsByte])),
      ]);
      // The deadline is 4 s from accept. The HTTPS server's own handshake timeout restarts at the
      // hand-over (3 s): alone, it would close both at 7 s. The bound leaves 2 s for a loaded machine.
      expect(untrusted).toEqual({ sentWhileOpen: true, closedAfter: expect.any(Number) });
      expect(untrusted.closedAfter).toBeLessThan(6_000);
      expect(trusted).toEqual({ sentWhileOpen: true, closedAfter: expect.any(Number) });
      expect(trusted.closedAfter).toBeLessThan(6_000);
    } finally {
      await new Promise((r) => bound.server.close(r));
    }
  });
});

/** A TLS client that asks for `count` pipelined copies of the API spec (about 70 KB each) and reads none. */
async function pipelinedSpecsNeverRead(url: string, ca: string, count: number) {
  const https = server.app.listeners[0]!.servers[0]!.server;
  const accepted: TLSSocket[] = [];
  const onAccepted = (s: TLSSocket) => void accepted.push(s);
  https.on('secureConnection', onAccepted);
  const port = Number(new URL(url).port);
  const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
  socket.on('error', () => undefined);
  await new Promise<void>((r) => socket.once('secureConnect', () => r()));
  // With TLS 1.3 the client is done before the server.
  const serverSide = await waitFor(() => accepted.find((s) => s.remotePort === socket.localPort), {
    what: 'the server side of the connection',
  }).finally(() => https.off('secureConnection', onAccepted));
  let closedByServer = false;
  serverSide.once('close', () => (closedByServer = true));
  // Not a byte is read: what the server writes piles up in the kernel buffers of both ends.
  socket.pause();
  socket.write(`GET ${MGMT}/spec HTTP/1.1\r\nHost: localhost:${port}\r\n\r\n`.repeat(count));
  return {
    closedByServer: () => closedByServer,
    /** Reads what had reached the client and counts the answers in it. */
    async answersReceived(): Promise<number> {
      let received = '';
      socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
      socket.resume();
      await new Promise((r) => (socket.closed ? r(undefined) : socket.once('close', r)));
      return received.split('HTTP/1.1 200 OK\r\n').length - 1;
    },
    destroy: () => socket.destroy(),
  };
}

/** A request whose body is still arriving: the server has it in hand (100 Continue) but cannot answer. */
async function halfSentLogin(url: string, ca: string) {
  const { port } = new URL(url);
  const socket: TLSSocket = connect({ host: '127.0.0.1', port: Number(port), ca, servername: 'localhost' });
  await new Promise<void>((r) => socket.once('secureConnect', () => r()));
  const body = JSON.stringify({ username: 'admin', password: 'admin-password-1' });
  let response = '';
  let ended = false;
  socket.on('data', (d) => (response += d));
  socket.on('close', () => (ended = true));
  socket.on('error', () => undefined);
  socket.write(
    `POST ${MGMT}/authenticate?method=password HTTP/1.1\r\nHost: localhost:${port}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n` +
      body.slice(0, 10),
  );
  await waitFor(() => response.includes('100 Continue'), { what: 'the server to take the request' });
  return {
    finish: () => socket.write(body.slice(10)),
    response: () => response,
    ended: () => ended,
    destroy: () => socket.destroy(),
  };
}

// Last: it stops the shared server. Requests that finish during the grace period are the
// spawned-process tests' subject (start-and-stop.test.ts).
describe('shutdown', () => {
  test('a request still unanswered when the grace period ends gets 503 and the listeners close', async () => {
    const never = await halfSentLogin(server.url, server.ca);
    try {
      await server.app.shutdown();
      await waitFor(() => never.ended(), { what: 'the unfinished request to be answered and closed' });
      const answer = never.response();
      expect(answer).toMatch(/HTTP\/1\.1 503 Service Unavailable/);
      expect(answer).toMatch(/\r\nConnection: close\r\n/i);
      expect(answer).toContain('"code":"SERVICE_UNAVAILABLE"');
      const port = Number(new URL(server.url).port);
      const refused = await new Promise<string>((resolve) => {
        const s = tcpConnect({ host: '127.0.0.1', port });
        s.once('connect', () => {
          s.destroy();
          resolve('connected');
        });
        s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
      });
      expect(refused).toBe('ECONNREFUSED');
    } finally {
      never.destroy();
    }
  });
});
