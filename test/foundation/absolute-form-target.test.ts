// RFC 9112 §3.2.2: a server MUST accept a request target in absolute form (`GET https://host/path`),
// and then takes the host from the target, not from the Host header.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { connect } from 'node:tls';
import { pino } from 'pino';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Joins the chunks of a `Transfer-Encoding: chunked` body (RFC 9112 §7.1). */
function dechunk(raw: string): string {
  let body = '';
  let rest = raw;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, eol), 16);
    if (!size) return body;
    body += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

/** One request written as raw bytes over TLS: the request line is exactly `GET <target> HTTP/1.1`. */
function rawGet(
  server: TestServer,
  port: number,
  target: string,
  host: string,
  extraHeaders = '',
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca: server.ca, servername: 'localhost' }, () => {
      socket.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\n${extraHeaders}Connection: close\r\n\r\n`);
    });
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...lines] = head!.split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      const raw = rest.join('\r\n\r\n');
      const body = headers['transfer-encoding'] === 'chunked' ? dechunk(raw) : raw;
      resolve({
        status: Number(statusLine!.split(' ')[1]),
        headers,
        body: /json/.test(headers['content-type'] ?? '') ? JSON.parse(body) : body,
      });
    });
  });
}

const envelope = (res: RawResponse, code: string) => ({
  error: { code, message: expect.any(String), requestId: res.headers['request-id'] },
  meta: { apiVersion: '1' },
});

describe('a request target in absolute form', () => {
  let server: TestServer;
  let port: number;
  let hostB: string;
  const logLines: { msg?: string; requestId?: string; path?: string; status?: number }[] = [];
  /** The access log line of the request that answered `res`. */
  const logLineOf = (res: RawResponse) =>
    logLines.find((l) => l.msg === 'request' && l.requestId === res.headers['request-id']);
  beforeAll(async () => {
    server = await startTestServer({
      logger: pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line)) }),
      overrides: (tree) => {
        tree.web = [
          {
            name: 'a',
            bindPoints: [
              { interface: '127.0.0.1:0', address: '127.0.0.1:0' },
              { interface: '127.0.0.1:0', address: 'localhost:0' },
            ],
            apis: [{ binding: 'edge-client' }, { binding: 'edge-management' }, { binding: 'edge-oidc' }],
          },
          {
            name: 'b',
            bindPoints: [{ interface: '127.0.0.2:0', address: '127.0.0.2:0' }],
            apis: [{ binding: 'edge-oidc' }],
          },
        ];
      },
    });
    port = Number(new URL(server.url).port);
    hostB = new URL(server.app.listeners[1]!.urls[0]!).host;
  });
  afterAll(() => server.close());

  test('is answered as its origin form: discovery of the issuer its authority names, Host ignored', async () => {
    const target = `https://localhost:${port}/oidc/.well-known/openid-configuration`;

    const res = await rawGet(server, port, target, `127.0.0.1:${port}`);

    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.issuer).toBe(`https://localhost:${port}/oidc`);
    expect(res.body.token_endpoint).toBe(`https://localhost:${port}/oidc/token`);
  });

  test('an unknown path, under /oidc or /edge, gets the JSON 404 envelope, not text/plain', async () => {
    for (const path of ['/oidc/nothing-here', '/edge/client/v1/nothing-here', '/nothing/here']) {
      const res = await rawGet(server, port, `https://127.0.0.1:${port}${path}`, `127.0.0.1:${port}`);
      expect({ path, status: res.status, type: res.headers['content-type'] }).toEqual({
        path,
        status: 404,
        type: expect.stringMatching(/^application\/json/),
      });
      expect(res.body).toEqual(envelope(res, 'NOT_FOUND'));
    }
  });

  test('the Edge APIs answer as they do to the origin form, query included', async () => {
    const res = await rawGet(
      server,
      port,
      `https://127.0.0.1:${port}/edge/client/v1/external-jwt-signers?limit=5`,
      `127.0.0.1:${port}`,
    );

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [], meta: expect.objectContaining({}) });
  });

  test('an authority this listener does not serve gets the unknown-host 404, even with a Host it serves', async () => {
    for (const authority of [hostB, `evil.example:${port}`]) {
      const res = await rawGet(
        server,
        port,
        `https://${authority}/oidc/.well-known/openid-configuration`,
        `127.0.0.1:${port}`,
      );
      expect(res.status).toBe(404);
      expect(res.body).toEqual(envelope(res, 'NOT_FOUND'));
      expect(res.body.error.message).toBe('no OIDC issuer is served at this address');
    }
  });

  test('a target that is no https URL of a host, or carries user information, gets a JSON 400', async () => {
    for (const target of [
      `http://127.0.0.1:${port}/oidc/keys`,
      `https://user@127.0.0.1:${port}/oidc/keys`,
      'https:///oidc/keys',
      `ftp://127.0.0.1:${port}/edge/client/v1/spec`,
    ]) {
      const res = await rawGet(server, port, target, `127.0.0.1:${port}`);
      expect({ target, status: res.status }).toEqual({ target, status: 400 });
      expect(res.body).toEqual({
        ...envelope(res, 'COULD_NOT_VALIDATE'),
        error: expect.objectContaining({ cause: { field: 'request-target', reason: expect.any(String) } }),
      });
    }
  });

  test('is logged with the path it was served as, whatever url.parse would make of the authority', async () => {
    for (const authority of [`127.0.0.1:${port}`, '%2e%2e']) {
      const res = await rawGet(
        server,
        port,
        `https://${authority}/edge/client/v1/external-jwt-signers?limit=5`,
        `127.0.0.1:${port}`,
      );
      expect({ authority, status: res.status }).toEqual({ authority, status: 200 });
      expect(logLineOf(res)).toMatchObject({ path: '/edge/client/v1/external-jwt-signers', status: 200 });
    }
  });

  test('an unparsable target, https or not, gets the JSON 400 and a log line, not a text/plain 500', async () => {
    for (const target of [
      'https://[/health/live',
      'https://x]/health/live',
      'https://[::1]x/health/live',
      'a://[/x',
    ]) {
      const res = await rawGet(server, port, target, `127.0.0.1:${port}`);
      expect({ target, status: res.status, type: res.headers['content-type'] }).toEqual({
        target,
        status: 400,
        type: expect.stringMatching(/^application\/json/),
      });
      expect(res.body).toEqual({
        ...envelope(res, 'COULD_NOT_VALIDATE'),
        error: expect.objectContaining({ cause: { field: 'request-target', reason: expect.any(String) } }),
      });
      expect(logLineOf(res)).toMatchObject({ status: 400 });
    }
  });

  test('an authority whose port is not a number is refused, not served to an administrator', async () => {
    const token = await server.adminToken();
    for (const authority of ['a:b:c', `127.0.0.1:${port}x`]) {
      const res = await rawGet(
        server,
        port,
        `https://${authority}/edge/management/v1/identities?limit=1`,
        `127.0.0.1:${port}`,
        `svc-session: ${token}\r\n`,
      );
      expect({ authority, status: res.status }).toEqual({ authority, status: 400 });
      expect(res.body.error).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'request-target' },
      });
      expect(logLineOf(res)).toMatchObject({ status: 400 });
      expect(logLineOf(res)?.path).toBeUndefined();
    }
  });
});
