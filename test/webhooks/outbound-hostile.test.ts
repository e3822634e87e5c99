import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { createServer as createPlainServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import type { KeyedCert } from '../../src/crypto/pki.js';
import { exportPrivateKeyPem, generateEcKeyPair } from '../../src/crypto/pki-keys.js';
import { hostSans, leafExtensions, pemText, signCertificate } from '../../src/crypto/pki-sign.js';
import { x509 } from '../../src/crypto/x509-runtime.js';
import { privateAddressKind } from '../../src/services/webhooks/private-address.js';
import { createOutboundPost } from '../../src/services/webhooks/outbound-post.js';
import { webhookUrlProblem } from '../../src/services/webhooks/webhook-target.js';
import { receiverPki } from './webhook-receiver.js';

/** CI replays one fixed seed; `npm run fuzz` passes a random one (printed by fast-check on failure). */
const SEED = Number(process.env.FUZZ_SEED ?? 42);
const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);

/** Receivers write this; no error message may repeat it. */
const MARKER = 'RECEIVER-SECRET-7f3a';

/** Every message a failed delivery may carry (besides refusals, which name the address). */
const KNOWN_FAILURES =
  /^(connection refused|connection reset|connection closed without a response|invalid HTTP response|timed out after \d+ (s|ms)|TLS: (certificate not trusted|certificate expired|certificate not yet valid|certificate does not name the host|certificate refused|handshake failed))$/;

let pki: { ca: KeyedCert; leaf: KeyedCert };
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  pki = await receiverPki();
});

afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

afterAll(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

// ---- Addresses in every spelling ---------------------------------------------------------------

type V4 = [number, number, number, number];

/** A random address inside one of the refused IPv4 ranges. */
const refusedV4: fc.Arbitrary<V4> = fc
  .constantFrom<[V4, number]>(
    [[0, 0, 0, 0], 8],
    [[10, 0, 0, 0], 8],
    [[100, 64, 0, 0], 10],
    [[127, 0, 0, 0], 8],
    [[169, 254, 0, 0], 16],
    [[172, 16, 0, 0], 12],
    [[192, 168, 0, 0], 16],
    [[192, 0, 0, 0], 24],
    [[198, 18, 0, 0], 15],
    [[224, 0, 0, 0], 4],
    [[240, 0, 0, 0], 4],
  )
  .chain(([network, prefix]) =>
    fc.integer({ min: 0, max: 2 ** (32 - prefix) - 1 }).map((host) => {
      const n = ((network[0] << 24) | (network[1] << 16) | (network[2] << 8) | network[3]) + host;
      return [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255] as V4;
    }),
  );

const anyV4: fc.Arbitrary<V4> = fc.tuple(
  fc.integer({ min: 0, max: 255 }),
  fc.integer({ min: 0, max: 255 }),
  fc.integer({ min: 0, max: 255 }),
  fc.integer({ min: 0, max: 255 }),
);

const hex = (n: number) => n.toString(16);
const word = (a: number, b: number) => hex((a << 8) | b);
const asInt = (v: V4) => ((v[0] << 24) | (v[1] << 16) | (v[2] << 8) | v[3]) >>> 0;

/** The host part of a URL for `v`, in the spellings URL parsers accept for an IPv4 address. */
const v4HostSpellings = (v: V4): string[] => [
  v.join('.'),
  `${v.join('.')}.`,
  String(asInt(v)),
  `0x${hex(asInt(v))}`,
  v.map((n) => `0x${hex(n)}`).join('.'),
  v.map((n) => `0${n.toString(8)}`).join('.'),
  `${v[0]}.${(v[1] << 16) | (v[2] << 8) | v[3]}`,
  `${v[0]}.${v[1]}.${(v[2] << 8) | v[3]}`,
];

/** IPv6 spellings that stand for `v`: mapped, translated, compatible, NAT64, 6to4. */
const v6Spellings = (v: V4): string[] => [
  `::ffff:${v.join('.')}`,
  `::ffff:${word(v[0], v[1])}:${word(v[2], v[3])}`,
  `0:0:0:0:0:FFFF:${word(v[0], v[1]).toUpperCase()}:${word(v[2], v[3])}`,
  `0000:0000:0000:0000:0000:ffff:${v.join('.')}`,
  `::ffff:0:${v.join('.')}`,
  `::${v.join('.')}`,
  `64:ff9b::${v.join('.')}`,
  `64:ff9b::${word(v[0], v[1])}:${word(v[2], v[3])}`,
  `2002:${word(v[0], v[1])}:${word(v[2], v[3])}::1`,
];

describe('hostile targets: a refused address is refused in every spelling', () => {
  test('URLs naming a refused IPv4 address, any spelling, any port', () => {
    fc.assert(
      fc.property(refusedV4, fc.option(fc.integer({ min: 1, max: 65535 })), (v, port) => {
        const suffix = port === null ? '' : `:${port}`;
        for (const host of [...v4HostSpellings(v), ...v6Spellings(v).map((s) => `[${s}]`)]) {
          const url = `https://${host}${suffix}/hook`;
          const problem = webhookUrlProblem(url, false);
          if (!problem?.endsWith('(allowed only with webhooks.allowPrivateTargets)'))
            throw new Error(`${url} was not refused: ${problem}`);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  test('every IPv6 spelling of an IPv4 address is judged as that address', () => {
    fc.assert(
      fc.property(anyV4, (v) => {
        const kind = privateAddressKind(v.join('.'));
        // ::a.b.c.d with a.b.c.d public would be a deprecated compatible address: same verdict.
        for (const s of v6Spellings(v))
          if (privateAddressKind(s) !== kind)
            throw new Error(`${s} is ${privateAddressKind(s)}, ${v.join('.')} is ${kind}`);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  test('refused addresses are refused at connect time too, whatever a resolver answers', async () => {
    const post = createOutboundPost({
      allowPrivateTargets: false,
      // a-10-0-0-5.test resolves to 10.0.0.5
      resolve: async (name) => [{ address: name.slice(2, -'.test'.length).replace(/-/g, '.'), family: 4 }],
    });
    await fc.assert(
      fc.asyncProperty(refusedV4, async (v) => {
        const url = `https://a-${v.join('-')}.test/hook`;
        await expect(post(url, '{}', {})).rejects.toThrow(
          `target address is ${privateAddressKind(v.join('.'))} (webhooks.allowPrivateTargets)`,
        );
        // The address the name resolved to is not told: refusals must not map the network.
        await expect(post(url, '{}', {})).rejects.not.toThrow(v.join('.'));
      }),
      { seed: SEED, numRuns: 200 },
    );
  });
});

// ---- Receivers that misbehave ------------------------------------------------------------------

/** A TLS receiver on 127.0.0.1 that answers the first bytes of a request with `behave`. */
async function rawReceiver(behave: (socket: TLSSocket) => void, leaf: KeyedCert = pki.leaf): Promise<string> {
  const sockets = new Set<TLSSocket>();
  const server = createTlsServer({ cert: leaf.certPem, key: leaf.keyPem }, (socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => behave(socket));
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return `https://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
}

const post = (url: string, timeoutMs = 5000) =>
  createOutboundPost({ allowPrivateTargets: true, extraCa: pki.ca.certPem, timeoutMs })(url, '{}', {});

/** The message of the delivery's failure, after checking that nothing in the error holds the receiver's bytes. */
async function failureOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    // A message and a stack, nothing else: no cause (a parser error keeps the raw packet).
    expect(Object.getOwnPropertyNames(err).sort()).toEqual(['message', 'stack']);
    return (err as Error).message;
  }
  throw new Error('expected the delivery to fail');
}

describe('hostile receivers: every failure is one short message of ours', () => {
  test.each<[string, (socket: TLSSocket) => void, string]>([
    ['not HTTP at all', (s) => s.end(`${MARKER} hello\r\n\r\n`), 'invalid HTTP response'],
    [
      'headers over 16 KiB',
      (s) => s.write(`HTTP/1.1 200 OK\r\nx-${MARKER}: ${'a'.repeat(20_000)}\r\n\r\n`),
      'invalid HTTP response',
    ],
    [
      'a header line that never ends',
      (s) => {
        s.write(`HTTP/1.1 200 OK\r\nx: ${MARKER}`);
        const timer = setInterval(() => s.write('a'.repeat(1024)), 5);
        s.on('close', () => clearInterval(timer));
      },
      'invalid HTTP response',
    ],
    [
      'a bad chunked body',
      (s) => s.end(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz${MARKER}\r\n`),
      'invalid HTTP response',
    ],
    [
      'a status line with a status of four digits',
      (s) => s.end(`HTTP/1.1 2000 ${MARKER}\r\ncontent-length: 0\r\n\r\n`),
      'invalid HTTP response',
    ],
    ['a close before any response', (s) => s.end(), 'connection closed without a response'],
    [
      'a body cut short of its content-length',
      (s) => s.end(`HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n${MARKER}`),
      'connection reset',
    ],
    [
      'informational responses without end',
      (s) => {
        const timer = setInterval(() => s.write(`HTTP/1.1 103 Early Hints\r\nlink: <${MARKER}>\r\n\r\n`), 5);
        s.on('close', () => clearInterval(timer));
      },
      'timed out after 500 ms',
    ],
  ])('%s', async (_name, behave, expected) => {
    const message = await failureOf(
      post(await rawReceiver(behave), expected.startsWith('timed out') ? 500 : 5000),
    );
    expect(message).toBe(expected);
    expect(message).toMatch(KNOWN_FAILURES);
    expect(message).not.toContain(MARKER);
  });

  test('a body of invalid UTF-8 and NUL bytes is a response, its preview a string', async () => {
    const url = await rawReceiver((s) =>
      s.end(
        Buffer.concat([
          Buffer.from('HTTP/1.1 400 Bad Request\r\ncontent-length: 6\r\n\r\n'),
          Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x41]),
        ]),
      ),
    );
    const response = await post(url);
    expect(response.status).toBe(400);
    expect(typeof response.bodyPreview).toBe('string');
  });

  test('a reset during the TLS handshake', async () => {
    const server = createTcpServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => socket.resetAndDestroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    expect(await failureOf(post(`https://127.0.0.1:${port}/hook`))).toBe('connection reset');
  });

  test('plain HTTP where TLS was expected', async () => {
    const server = createPlainServer((_req, res) => res.end(MARKER));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as { port: number }).port;
    const message = await failureOf(post(`https://127.0.0.1:${port}/hook`));
    expect(message).toBe('TLS: handshake failed');
  });

  test('an expired certificate', async () => {
    const keys = await generateEcKeyPair();
    const day = 24 * 60 * 60 * 1000;
    const cert = await signCertificate(pki.ca, {
      subjectCn: '127.0.0.1',
      publicKey: keys.publicKey,
      validityDays: 1,
      notBefore: new Date(Date.now() - 3 * day),
      notAfter: new Date(Date.now() - day),
      extensions: leafExtensions([x509.ExtendedKeyUsage.serverAuth], hostSans(['127.0.0.1'])),
    });
    const expired = { certPem: pemText(cert), keyPem: await exportPrivateKeyPem(keys.privateKey) };
    const url = await rawReceiver((s) => s.end('HTTP/1.1 204 No Content\r\n\r\n'), expired);
    expect(await failureOf(post(url))).toBe('TLS: certificate expired');
  });

  test('a CA certificate served as the receiver certificate', async () => {
    const url = await rawReceiver((s) => s.end('HTTP/1.1 204 No Content\r\n\r\n'), pki.ca);
    expect(await failureOf(post(url))).toBe('TLS: certificate refused');
  });
});
