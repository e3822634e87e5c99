// The PROXY listener's stream handling, fuzzed over real sockets: headers split at random points
// into TCP segments, damaged headers, and signature fragments from untrusted peers. A bare HTTPS
// server answers with the client address it sees, so every run checks what a request would use.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { createServer, type Server } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { generateRootCa, issueServerCert } from '../../src/crypto/pki.js';
import { listenWithProxyProtocol } from '../../src/listeners/proxy-listener.js';
import { parseProxyHeader, V1_SIGNATURE, V2_SIGNATURE } from '../../src/listeners/proxy-protocol.js';
import { connectWithPreamble, proxyV1, proxyV2 } from '../helpers/proxy-header.js';

const SEED = Number(process.env.FUZZ_SEED ?? 42);
const PROXY = '127.0.0.2';
const STRANGER = '127.0.0.3';

describe('PROXY listener over real sockets (fuzzed)', () => {
  let server: Server;
  let port: number;
  let ca: string;

  beforeAll(async () => {
    const root = await generateRootCa({ commonName: 'proxy fuzz root' });
    const leaf = await issueServerCert(root, { hosts: ['127.0.0.1'] });
    ca = root.certPem;
    server = createServer({ key: leaf.keyPem, cert: leaf.certPem }, (req, res) => {
      res.end(JSON.stringify({ address: req.socket.remoteAddress, port: req.socket.remotePort }));
    });
    port = await listenWithProxyProtocol(server, '127.0.0.1', 0, {
      trustedFrom: [`${PROXY}/32`],
      headerTimeoutMs: 300,
      handshakeTimeoutMs: 1000,
    });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Sends the chunks, then one HTTPS request; resolves with the address served, or 'closed'. */
  async function exchange(
    from: string,
    chunks: Buffer[],
  ): Promise<{ address: string; port: number } | 'closed'> {
    const raw = await connectWithPreamble('127.0.0.1', port, { chunks, chunkDelayMs: 2, localAddress: from });
    return new Promise((resolve) => {
      const tls = tlsConnect({ socket: raw, ca, host: '127.0.0.1' });
      let body = '';
      tls.on('secureConnect', () =>
        tls.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
      );
      tls.on('data', (d: Buffer) => (body += d.toString()));
      tls.on('error', () => undefined);
      tls.on('close', () => {
        const json = body.slice(body.indexOf('\r\n\r\n') + 4);
        resolve(body.startsWith('HTTP/1.1 200') ? JSON.parse(json) : 'closed');
      });
    });
  }

  /** `data` cut at the given (sorted, distinct) offsets. */
  const cut = (data: Buffer, at: number[]) =>
    [0, ...at, data.length].slice(1).map((end, i, ends) => data.subarray(i === 0 ? 0 : ends[i - 1], end));

  const source = fc.oneof(
    fc
      .tuple(fc.ipV4(), fc.integer({ min: 1, max: 65535 }))
      .map(([address, port]) => ({ address, port, family: 'IPv4' })),
    fc
      .tuple(
        fc.ipV6().filter((a) => !a.includes('.')),
        fc.integer({ min: 1, max: 65535 }),
      )
      .map(([address, port]) => ({ address, port, family: 'IPv6' })),
  );

  test('a valid header cut anywhere into segments gives its source to the request', async () => {
    await fc.assert(
      fc.asyncProperty(
        source,
        fc.boolean(),
        fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { maxLength: 4 }),
        async (src, v1, offsets) => {
          const header = v1 ? proxyV1(src) : proxyV2(src);
          const at = offsets.filter((o) => o < header.length).sort((a, b) => a - b);
          // IPv6 text has many spellings: compare with the parser's (its own tests pin RFC 5952).
          const parsed = parseProxyHeader(header) as { header: { source: { address: string } } };
          const expected = src.family === 'IPv4' ? src.address : parsed.header.source.address;
          expect(await exchange(PROXY, cut(header, at))).toEqual({ address: expected, port: src.port });
        },
      ),
      { seed: SEED, numRuns: 40 },
    );
  }, 120_000);

  test('a damaged header is served only as the parser reads it, otherwise closed', async () => {
    await fc.assert(
      fc.asyncProperty(
        source,
        fc.boolean(),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        async (src, v1, where, flip) => {
          const header = Buffer.from(v1 ? proxyV1(src) : proxyV2(src));
          header[where % header.length] ^= flip;
          const parsed = parseProxyHeader(header);
          const outcome = await exchange(PROXY, [header]);
          if (parsed.state !== 'complete') {
            expect(outcome).toBe('closed');
          } else if (outcome !== 'closed') {
            expect(outcome.address).toBe(parsed.header.source?.address ?? PROXY);
          }
        },
      ),
      { seed: SEED, numRuns: 40 },
    );
  }, 120_000);

  test('an untrusted peer is closed as soon as it starts like a header; otherwise served as itself', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(V2_SIGNATURE, V1_SIGNATURE),
        fc.integer({ min: 1, max: 12 }),
        async (signature, n) => {
          expect(await exchange(STRANGER, [signature.subarray(0, Math.min(n, signature.length))])).toBe(
            'closed',
          );
        },
      ),
      { seed: SEED, numRuns: 20 },
    );
    const plain = await exchange(STRANGER, []);
    expect(plain).not.toBe('closed');
    expect((plain as { address: string }).address).toBe(STRANGER);
  }, 120_000);

  test('a trusted peer that sends nothing before TLS is closed', async () => {
    expect(await exchange(PROXY, [])).toBe('closed');
  });
});
