import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { connect, type ConnectionOptions } from 'node:tls';
import { pino } from 'pino';
import { connectWithPreamble, proxyV2 } from '../helpers/proxy-header.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

// The generated server certificate has an ECDSA P-256 key: the ECDSA suites are the ones it serves.
const CBC_SUITES = 'ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA';
const GCM_SUITES = 'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256';

type Handshake = { ok: true; protocol: string | null; cipher: string } | { ok: false };

/** One TLS handshake as a client limited to `options` would make it, then closed. */
function handshake(server: TestServer, options: ConnectionOptions, url = server.url): Promise<Handshake> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const target = { host: hostname, port: Number(port), ca: server.ca, servername: 'localhost' };
    const socket = connect({ ...target, ...options }, () => {
      resolve({ ok: true, protocol: socket.getProtocol(), cipher: socket.getCipher().name });
      socket.end();
    });
    socket.on('error', () => resolve({ ok: false }));
  });
}

const tls12 = (ciphers: string): ConnectionOptions => ({ maxVersion: 'TLSv1.2', ciphers });

describe('TLS cipher suites', () => {
  describe('by default', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer();
    });
    afterAll(() => server.close());

    test('a TLS 1.2 client offering only CBC suites is refused', async () => {
      expect(await handshake(server, tls12(CBC_SUITES))).toEqual({ ok: false });
    });

    test('a TLS 1.2 client offering AES-GCM gets it', async () => {
      expect(await handshake(server, tls12(GCM_SUITES))).toEqual({
        ok: true,
        protocol: 'TLSv1.2',
        cipher: 'ECDHE-ECDSA-AES128-GCM-SHA256',
      });
    });

    test('TLS 1.3 works as before', async () => {
      const result = await handshake(server, { minVersion: 'TLSv1.3' });

      expect(result).toMatchObject({ ok: true, protocol: 'TLSv1.3' });
    });
  });

  describe('on every listener: behind a PROXY protocol header, and the metrics listener', () => {
    const PROXY = '127.0.0.2';
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({
        env: { SVC_PROXY_PROTOCOL_TRUSTED_FROM: `${PROXY}/32`, SVC_METRICS_ADDRESS: '127.0.0.1:0' },
      });
    });
    afterAll(() => server.close());

    /** The handshake after a PROXY header sent from the trusted proxy's address. */
    async function behindProxy(options: ConnectionOptions): Promise<Handshake> {
      const { hostname, port } = new URL(server.url);
      const raw = await connectWithPreamble(hostname, Number(port), {
        chunks: [proxyV2({ address: '203.0.113.9', port: 40000 })],
        localAddress: PROXY,
      });
      return handshake(server, { ...options, socket: raw });
    }

    test('only the AEAD suites are offered on TLS 1.2', async () => {
      const metricsUrl = server.app.listeners.find((l) => l.name === 'metrics')!.urls[0]!;

      expect(await behindProxy(tls12(CBC_SUITES))).toEqual({ ok: false });
      expect(await behindProxy(tls12(GCM_SUITES))).toMatchObject({ ok: true, protocol: 'TLSv1.2' });
      expect(await handshake(server, tls12(CBC_SUITES), metricsUrl)).toEqual({ ok: false });
      expect(await handshake(server, tls12(GCM_SUITES), metricsUrl)).toMatchObject({ ok: true });
    });
  });

  describe('widened with tls.ciphers', () => {
    let server: TestServer;
    const lines: { level: number; msg: string }[] = [];
    beforeAll(async () => {
      const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      server = await startTestServer({
        logger,
        env: { SVC_TLS_CIPHERS: `${GCM_SUITES}:ecdhe-ecdsa-aes128-sha` },
      });
    });
    afterAll(() => server.close());

    test('the added CBC suite works, TLS 1.3 still does, and the start logged a warning naming it', async () => {
      const cbc = await handshake(server, tls12(CBC_SUITES));
      const v13 = await handshake(server, { minVersion: 'TLSv1.3' });

      expect(cbc).toEqual({ ok: true, protocol: 'TLSv1.2', cipher: 'ECDHE-ECDSA-AES128-SHA' });
      expect(v13).toMatchObject({ ok: true, protocol: 'TLSv1.3' });
      const warnings = lines.filter((l) => l.level === 40).map((l) => l.msg);
      expect(warnings).toContain(
        'tls.ciphers offers TLS 1.2 suites beyond the default: ECDHE-ECDSA-AES128-SHA',
      );
    });
  });
});
