import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import { spawnController, type SpawnedController } from '../helpers/spawn-controller.js';
import { acceptsConnections } from '../helpers/accepts-connections.js';
import { waitFor } from '../helpers/wait-for.js';

// One controller process (tsx, migrations, PKI: minutes on a loaded machine) serves both tests:
// its start-up window, then its shutdown. Every wait has its own bound.
jest.setTimeout(240_000);

const MGMT = '/edge/management/v1';
const LOGIN = JSON.stringify({ username: 'admin', password: 'admin-password-1' });
/** Short next to "forever", long enough for a loaded 2-core machine to answer anything. */
const CLIENT_TIMEOUT_MS = 10_000;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/** One HTTPS request that gives up (rejects) when no answer comes within CLIENT_TIMEOUT_MS. */
function send(
  port: number,
  path: string,
  options: { ca: string; agent?: Agent; method?: string; body?: string; headers?: Record<string, string> },
) {
  return new Promise<Answer>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        ca: options.ca,
        agent: options.agent ?? false,
        headers: { ...options.headers, ...(options.body && { 'content-type': 'application/json' }) },
        timeout: CLIENT_TIMEOUT_MS,
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            body: String(res.headers['content-type']).includes('json') ? JSON.parse(text) : text,
          }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer to ${path} within ${CLIENT_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A TLS connection written to by hand: requests stay on it (keep-alive) until the server closes it. */
async function rawConnection(port: number, ca: string) {
  const socket: TLSSocket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
  await new Promise<void>((r) => socket.once('secureConnect', () => r()));
  let buffer = '';
  let closed = false;
  socket.on('data', (d) => (buffer += d));
  socket.on('close', () => (closed = true));
  socket.on('error', () => undefined);
  /** The next complete response (Content-Length framed, as the controller answers). */
  const nextResponse = () =>
    waitFor(
      () => {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return undefined;
        const head = buffer.slice(0, end);
        if (/^HTTP\/1\.1 100 /.test(head)) {
          buffer = buffer.slice(end + 4);
          return undefined;
        }
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return undefined;
        const body = buffer.slice(end + 4, end + 4 + length);
        buffer = buffer.slice(end + 4 + length);
        const headers = Object.fromEntries(
          head
            .split('\r\n')
            .slice(1)
            .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
        );
        return { status: Number(head.split(' ')[1]), headers, body: body ? JSON.parse(body) : undefined };
      },
      { timeout: CLIENT_TIMEOUT_MS, interval: 10, what: 'a response' },
    );
  return {
    write: (text: string) => socket.write(text),
    nextResponse,
    sawContinue: () => buffer.includes('100 Continue') || buffer.length > 0,
    closed: () => closed,
    destroy: () => socket.destroy(),
  };
}

describe('a controller process from bind to exit', () => {
  let c: SpawnedController;
  beforeAll(async () => {
    c = await spawnController({ SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-start-')) });
  });
  afterAll(async () => {
    if (c && c.child.exitCode === null) c.child.kill('SIGKILL');
    await c?.exited;
  });

  test('from the first accepted connection until ready, every request is answered at once: 503 starting, then 200', async () => {
    await waitFor(
      () => {
        // A start that fails is reported with its output (waitFor names the last error).
        if (c.child.exitCode !== null)
          throw new Error(`controller exited ${c.child.exitCode}: ${c.output()}`);
        return acceptsConnections(c.port);
      },
      { timeout: 180_000, interval: 5, what: 'the port to accept a connection' },
    );
    const ca = c.ca();
    const keptAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    const paths = ['/health/ready', '/health/live', '/.well-known/openid-configuration'];
    // A single-page app on an allowed origin (a default localhost callback's) reads discovery.
    const origin = 'http://localhost:4200';
    const answers: (Answer & { path: string })[] = [];
    for (let i = 0; ; i++) {
      if (c.child.exitCode !== null) throw new Error(`controller exited ${c.child.exitCode}: ${c.output()}`);
      const path = paths[i % paths.length]!;
      // Fresh connections and one kept-alive connection, which the application takes over.
      const answer = await send(c.port, path, {
        ca,
        agent: i % 2 === 0 ? keptAlive : undefined,
        headers: { origin },
      });
      answers.push({ path, ...answer });
      if (path === '/health/ready' && answer.status === 200) break;
    }
    const starting = answers.filter((a) => a.status === 503);
    process.stdout.write(
      `start-up window: ${answers.length} requests sent back to back, ${answers.length} answered ` +
        `(${starting.length} with 503 starting), none unanswered\n`,
    );
    expect(answers.map((a) => a.status).filter((s) => s !== 200 && s !== 503)).toEqual([]);
    // The window exists (the OIDC part is built after the port is bound) and was answered.
    expect(starting.length).toBeGreaterThan(0);
    for (const a of starting) {
      expect(a.headers['retry-after']).toBe('1');
      expect(a.body).toEqual({
        error: {
          code: 'SERVICE_UNAVAILABLE',
          message: expect.stringContaining('starting'),
          requestId: a.headers['request-id'],
        },
        meta: { apiVersion: '1' },
      });
    }
    // A browser app sees the 503 itself (CORS headers), not an opaque network error.
    const discovery = starting.filter((a) => a.path === '/.well-known/openid-configuration');
    for (const a of discovery) expect(a.headers['access-control-allow-origin']).toBe(origin);
    // The process runs: liveness never says otherwise.
    expect(answers.filter((a) => a.path === '/health/live').every((a) => a.status === 200)).toBe(true);
    // The start-up answers are counted like every other, under the route label "starting".
    const scrape = await send(c.port, '/metrics', { ca });
    const counted = [
      ...String(scrape.body).matchAll(
        /^svc_http_requests_total\{[^}]*route="starting"[^}]*status="503"[^}]*\} (\d+)$/gm,
      ),
    ]
      .map((m) => Number(m[1]))
      .reduce((a, b) => a + b, 0);
    expect(counted).toBe(starting.length);
    // Once ready, the application answers, on the connection opened during start-up too.
    const login = await send(c.port, `${MGMT}/authenticate?method=password`, {
      ca,
      agent: keptAlive,
      method: 'POST',
      body: LOGIN,
    });
    expect(login.status).toBe(200);
    expect(typeof login.body.data.token).toBe('string');
    keptAlive.destroy();
  });

  test('SIGTERM: in-flight requests finish, new connections are refused, a request on an open connection gets 503 with Connection: close, exit 0', async () => {
    const ca = c.ca();
    // In flight: the server has the request (100 Continue) but not yet all of its body.
    const inFlight = await rawConnection(c.port, ca);
    inFlight.write(
      `POST ${MGMT}/authenticate?method=password HTTP/1.1\r\nHost: localhost:${c.port}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${LOGIN.length}\r\nExpect: 100-continue\r\n\r\n` +
        LOGIN.slice(0, 10),
    );
    await waitFor(() => inFlight.sawContinue(), { what: 'the server to take the request' });
    // Open and idle: one request answered, the connection kept alive.
    const open = await rawConnection(c.port, ca);
    open.write(`GET /health/live HTTP/1.1\r\nHost: localhost:${c.port}\r\n\r\n`);
    expect((await open.nextResponse()).status).toBe(200);

    const signalled = Date.now();
    c.child.kill('SIGTERM');
    await waitFor(() => c.output().includes('stopping: finishing in-flight requests'), { what: 'the stop' });

    open.write(`GET ${MGMT}/current-identity HTTP/1.1\r\nHost: localhost:${c.port}\r\n\r\n`);
    const late = await open.nextResponse();
    expect(late.status).toBe(503);
    expect(late.headers.connection).toBe('close');
    expect(late.headers['retry-after']).toBe('1');
    expect(late.body.error).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      message: expect.stringContaining('stopping'),
    });
    await waitFor(() => open.closed(), { what: 'the server to close that connection' });

    await waitFor(async () => !(await acceptsConnections(c.port)), {
      interval: 50,
      what: 'new connections to be refused',
    });

    inFlight.write(LOGIN.slice(10));
    const finished = await inFlight.nextResponse();
    expect(finished.status).toBe(200);
    expect(typeof finished.body.data.token).toBe('string');
    expect(finished.headers.connection).toBe('close');

    expect(await c.exited).toBe(0);
    process.stdout.write(`shutdown: exited ${Date.now() - signalled} ms after SIGTERM\n`);
    expect(c.output()).toContain('"msg":"stopped"');
  });
});
