// A listener with proxyProtocol.trustedFrom, driven over real TCP and TLS: the header is read
// before the handshake, the client address it carries is the one the controller uses, and nobody
// else may send one. The HAProxy test (test/replicated/haproxy.test.ts) runs the same with the real
// proxy in front of several processes.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { connect as netConnect } from 'node:net';
import { createServer as createHttpsServer } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { pino } from 'pino';
import { generateClientKeyAndCsr } from '../../src/crypto/pki.js';
import { listenWithProxyProtocol } from '../../src/listeners/proxy-listener.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  clientBehindHeader,
  closedByPeer,
  connectWithPreamble,
  proxyV1,
  proxyV2,
} from '../helpers/proxy-header.js';
import {
  CLIENT,
  createIdentity,
  enrolledUpdbUser,
  identityDetail,
  managementApi,
} from '../identities/identity-fixtures.js';
import { waitFor } from '../helpers/wait-for.js';

/** The address our stand-in proxy connects from; the test server's own client uses 127.0.0.1. */
const PROXY = '127.0.0.2';

describe('PROXY protocol on a listener', () => {
  let server: TestServer;
  let port: number;
  const lines: Record<string, any>[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });

  beforeAll(async () => {
    server = await startTestServer({
      env: { SVC_PROXY_PROTOCOL_TRUSTED_FROM: `${PROXY}/32` },
      logger,
    });
    port = Number(new URL(server.url).port);
  }, 180_000);
  afterAll(() => server.close());

  const behind = (header: () => Buffer[], o: { cert?: string; key?: string; chunkDelayMs?: number } = {}) =>
    clientBehindHeader(server.url, { ca: server.ca, localAddress: PROXY, header, ...o });

  /** The client address of the request log line of the response's request id. */
  async function loggedAddress(requestId: string | undefined): Promise<string> {
    const line = await waitFor(() => lines.find((l) => l.msg === 'request' && l.requestId === requestId), {
      what: `request log line of ${requestId}`,
    });
    return line.clientAddress;
  }

  test('the address of a v2, v1 or IPv6 header is the client address; LOCAL keeps the socket address', async () => {
    const cases: [Buffer, string][] = [
      [proxyV2({ address: '203.0.113.7', port: 40001 }), '203.0.113.7'],
      [proxyV1({ address: '198.51.100.9', port: 40002 }), '198.51.100.9'],
      [proxyV2({ address: '2001:db8::7', port: 40003 }), '2001:db8::7'],
      [proxyV2(), PROXY],
    ];
    for (const [header, expected] of cases) {
      const client = behind(() => [header]);
      const res = await client.get('/health/live');
      await client.close();
      expect(res.status).toBe(200);
      expect(await loggedAddress(res.header('request-id'))).toBe(expected);
    }
  });

  test('a header split over many TCP segments, the last with the TLS ClientHello, still works', async () => {
    const header = proxyV2({ address: '203.0.113.8', port: 40004 });
    const client = behind(() => [...header].map((b) => Buffer.from([b])), { chunkDelayMs: 5 });
    const res = await client.get('/health/live');
    await client.close();
    expect(res.status).toBe(200);
    expect(await loggedAddress(res.header('request-id'))).toBe('203.0.113.8');
  });

  test('a failed login is counted under the address from the header, not the proxy', async () => {
    const api = managementApi(server, await server.adminToken());
    await enrolledUpdbUser(server, api, 'proxied-user');
    const client = behind(() => [proxyV2({ address: '203.0.113.9', port: 40005 })]);
    const res = await client.post(`${CLIENT}/authenticate?method=password`, {
      body: { username: 'proxied-user', password: 'wrong-password-1' },
    });
    await client.close();
    expect(res.status).toBe(401);
    const rows = await server.app.knex('login_address_failures').select('client_address');
    const addresses = rows.map((r) => r.client_address);
    expect(addresses).toContain('203.0.113.9');
    expect(addresses).not.toContain(PROXY);
    const audited = lines.find(
      (l) => l.audit && l.event === 'auth.login' && l.requestId === res.header('request-id'),
    );
    expect(audited).toMatchObject({ outcome: 'failure', sourceAddress: '203.0.113.9' });
  });

  test('a client certificate reaches the controller through the header (TLS is end to end)', async () => {
    const api = managementApi(server, await server.adminToken());
    const id = await createIdentity(api, {
      name: 'proxied-device',
      type: 'Device',
      isAdmin: false,
      enrollment: { ott: true },
    });
    const token = (await identityDetail(api, id)).enrollment.ott.token;
    const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: 'proxied-device' });
    const enrolled = await server.client.post(`${CLIENT}/enroll/ott`, { body: { token, clientCsr: csrPem } });
    expect(enrolled.status).toBe(200);
    const client = behind(() => [proxyV2({ address: '203.0.113.10', port: 40006 })], {
      cert: enrolled.body.data.cert,
      key: keyPem,
    });
    const login = await client.post(`${CLIENT}/authenticate?method=cert`, { body: {} });
    await client.close();
    expect(login.status).toBe(200);
    expect(login.body.data.identityId).toBe(id);
    expect(await loggedAddress(login.header('request-id'))).toBe('203.0.113.10');
  });

  test('no request but the LOCAL one was logged with the proxy address', () => {
    const proxied = lines.filter((l) => l.msg === 'request' && l.clientAddress === PROXY);
    // Only the LOCAL request of the first test keeps the proxy's address.
    expect(proxied).toHaveLength(1);
  });

  /** Writes `chunks` from `from`, then tries a TLS handshake; resolves whether it completed. */
  async function handshakes(from: string, chunks: Buffer[]): Promise<boolean> {
    const raw = await connectWithPreamble('127.0.0.1', port, { chunks, localAddress: from });
    const tls = tlsConnect({ socket: raw, ca: server.ca, host: '127.0.0.1' });
    return new Promise((resolve) => {
      tls.once('secureConnect', () => {
        tls.destroy();
        resolve(true);
      });
      tls.once('error', () => resolve(false));
      tls.once('close', () => resolve(false));
    });
  }

  test('a trusted address without a valid header is refused; a valid one is served', async () => {
    expect(await handshakes(PROXY, [proxyV2({ address: '203.0.113.11', port: 1 })])).toBe(true);
    expect(await handshakes(PROXY, [])).toBe(false);
    expect(await handshakes(PROXY, [Buffer.from('PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n')])).toBe(false);
    const broken = proxyV2({ address: '203.0.113.11', port: 1 });
    broken[13] = 0x51; // address family 5
    expect(await handshakes(PROXY, [broken])).toBe(false);
    // v1 carries plain addresses only: no zone index.
    expect(await handshakes(PROXY, [Buffer.from('PROXY TCP6 fe80::1%eth0 ::1 1 443\r\n')])).toBe(false);
    expect(lines.some((l) => l.msg === 'connection refused: PROXY protocol' && l.peer === PROXY)).toBe(true);
  });

  test('any other address that sends a header is refused; without one it is served as before', async () => {
    expect(await handshakes('127.0.0.3', [proxyV2({ address: '203.0.113.12', port: 1 })])).toBe(false);
    expect(await handshakes('127.0.0.3', [proxyV1({ address: '203.0.113.12', port: 1 })])).toBe(false);
    expect(await handshakes('127.0.0.3', [])).toBe(true);
    const res = await server.newClient({ localAddress: '127.0.0.3' }).get('/health/live');
    expect(res.status).toBe(200);
    expect(await loggedAddress(res.header('request-id'))).toBe('127.0.0.3');
  });

  test('a peer refused again and again is logged once, not once per connection', async () => {
    const forged = () => [proxyV2({ address: '203.0.113.14', port: 1 })];
    for (let i = 0; i < 10; i++) expect(await handshakes('127.0.0.4', forged())).toBe(false);
    const refused = lines.filter(
      (l) => l.msg === 'connection refused: PROXY protocol' && l.peer === '127.0.0.4',
    );
    expect(refused).toHaveLength(1);
  });

  test('a trusted peer that sends no header, or half of one, is closed after the header deadline', async () => {
    const silent = netConnect({ host: '127.0.0.1', port, localAddress: PROXY });
    const half = await connectWithPreamble('127.0.0.1', port, {
      chunks: [proxyV2({ address: '203.0.113.13', port: 1 }).subarray(0, 20)],
      localAddress: PROXY,
    });
    const [fromSilent, fromHalf] = await Promise.all([closedByPeer(silent), closedByPeer(half)]);
    expect(fromSilent.length).toBe(0);
    expect(fromHalf.length).toBe(0);
  }, 30_000);
});

describe('trustedFrom ranges are matched within their own address family', () => {
  const servers: TestServer[] = [];
  afterAll(() => Promise.all(servers.map((s) => s.close())));

  async function serverTrusting(trustedFrom: string) {
    const server = await startTestServer({ env: { SVC_PROXY_PROTOCOL_TRUSTED_FROM: trustedFrom } });
    servers.push(server);
    const port = Number(new URL(server.url).port);
    /** Writes `chunks` from 127.0.0.2, then tries a TLS handshake; resolves whether it completed. */
    return async (chunks: Buffer[]): Promise<boolean> => {
      const raw = await connectWithPreamble('127.0.0.1', port, { chunks, localAddress: PROXY });
      const tls = tlsConnect({ socket: raw, ca: server.ca, host: '127.0.0.1' });
      return new Promise((resolve) => {
        tls.once('secureConnect', () => {
          tls.destroy();
          resolve(true);
        });
        tls.once('error', () => resolve(false));
        tls.once('close', () => resolve(false));
      });
    };
  }
  const header = () => [proxyV2({ address: '1.1.1.1', port: 1 })];

  test('::ffff:10.0.0.0/8, which Node would match against every IPv4 peer, is refused at start', async () => {
    await expect(
      listenWithProxyProtocol(createHttpsServer(), '127.0.0.1', 0, {
        trustedFrom: ['::ffff:10.0.0.0/8'],
        handshakeTimeoutMs: 1000,
      }),
    ).rejects.toThrow(
      'proxyProtocol.trustedFrom: ::ffff:10.0.0.0/8 must be an address or CIDR; an IPv4-mapped',
    );
  });

  test('an IPv6 range, even ::/0, trusts no IPv4 peer: 127.0.0.2 cannot claim another address', async () => {
    const handshakes = await serverTrusting('::/0,::ffff:10.0.0.0/104');
    expect(await handshakes(header())).toBe(false);
    expect(await handshakes([])).toBe(true);
  }, 180_000);

  test('an IPv4-mapped address trusts that IPv4 peer', async () => {
    const handshakes = await serverTrusting('::ffff:127.0.0.2');
    expect(await handshakes(header())).toBe(true);
    expect(await handshakes([])).toBe(false);
  }, 180_000);
});

describe('a listener with proxyProtocol beside one without', () => {
  let server: TestServer;
  const lines: Record<string, any>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const urlOf = (name: string) => server.app.listeners.find((l) => l.name === name)!.urls[0]!;

  beforeAll(async () => {
    server = await startTestServer({
      logger,
      overrides: (tree) => {
        tree.web = [
          {
            name: 'proxied',
            bindPoints: [{ interface: '127.0.0.1:0', address: '127.0.0.1:0' }],
            apis: [{ binding: 'edge-client' }],
            proxyProtocol: { trustedFrom: [PROXY] },
          },
          {
            name: 'direct',
            bindPoints: [{ interface: '127.0.0.9:0', address: '127.0.0.9:0' }],
            apis: [{ binding: 'edge-client' }],
          },
        ];
      },
    });
  }, 180_000);
  afterAll(() => server.close());

  /** GET /health/live from PROXY with `header` first; the logged client address, or 'closed'. */
  async function servedAs(name: string, header: Buffer[]): Promise<string> {
    const client = clientBehindHeader(urlOf(name), {
      ca: server.ca,
      localAddress: PROXY,
      header: () => header,
    });
    const res = await client.get('/health/live').catch(() => undefined);
    await client.close();
    if (!res) return 'closed';
    const id = res.header('request-id');
    const line = await waitFor(() => lines.find((l) => l.msg === 'request' && l.requestId === id), {
      what: `request log line of ${id}`,
    });
    return line.clientAddress;
  }

  test('only the listener with the setting reads the header; the other serves the peer as itself', async () => {
    const header = [proxyV2({ address: '203.0.113.20', port: 1 })];
    expect(await servedAs('proxied', header)).toBe('203.0.113.20');
    expect(await servedAs('direct', [])).toBe(PROXY);
    // To a listener without the setting a header is bytes that are not TLS: the handshake fails.
    expect(await servedAs('direct', header)).toBe('closed');
  });
});
