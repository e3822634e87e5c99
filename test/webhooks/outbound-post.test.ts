import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { LookupAddress } from 'node:dns';
import { connect } from 'node:tls';
import type { KeyedCert } from '../../src/crypto/pki.js';
import { createOutboundPost, type OutboundPostOptions } from '../../src/services/webhooks/outbound-post.js';
import { guardConnectedAddress } from '../../src/services/webhooks/target-address-guard.js';
import {
  receiverPki,
  startReceiver,
  startTcpRecorder,
  type Receiver,
  type ReceiverHandler,
} from './webhook-receiver.js';

const MiB = 1024 * 1024;
const BODY = '{"type":"identity.created"}';
const HEADERS = { 'content-type': 'application/json', 'webhook-id': 'msg_1' };

let pki: { ca: KeyedCert; leaf: KeyedCert };
const running: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  pki = await receiverPki();
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

async function receiver(handle?: ReceiverHandler): Promise<Receiver> {
  const r = await startReceiver(pki.leaf, handle);
  running.push(r);
  return r;
}

/** A poster for the test receivers: private targets allowed and the test CA trusted, unless overridden. */
const poster = (options: Partial<OutboundPostOptions> = {}) =>
  createOutboundPost({ allowPrivateTargets: true, extraCa: pki.ca.certPem, ...options });

/** A resolver that answers every name with `addresses` in turn, and counts its calls. */
function resolverAnswering(...answers: string[][]) {
  const calls: string[] = [];
  const resolve = async (hostname: string): Promise<LookupAddress[]> => {
    calls.push(hostname);
    const answer = answers[Math.min(calls.length - 1, answers.length - 1)]!;
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, calls };
}

describe('a real HTTPS receiver on 127.0.0.1 with a test CA', () => {
  test('refused without allowPrivateTargets: no connection is made', async () => {
    const r = await receiver();
    await expect(poster({ allowPrivateTargets: false })(r.url(), BODY, HEADERS)).rejects.toThrow(
      'target URL names the loopback address 127.0.0.1 (allowed only with webhooks.allowPrivateTargets)',
    );
    expect(r.connections()).toBe(0);
  });

  test('delivered with allowPrivateTargets and the CA as extraCa: body, headers, no SNI for an address', async () => {
    const r = await receiver((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks'),
    );
    const response = await poster()(r.url('/hook?tenant=a'), BODY, HEADERS);
    expect(response).toMatchObject({ status: 200, bodyPreview: 'thanks' });
    expect(response.durationMs).toBeGreaterThanOrEqual(0);
    expect(r.hits).toHaveLength(1);
    expect(r.hits[0]).toMatchObject({
      method: 'POST',
      path: '/hook?tenant=a',
      body: BODY,
      servername: false,
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_1',
        'content-length': String(BODY.length),
      },
    });
  });

  test('refused when the CA is not given: the system store alone does not trust it', async () => {
    const r = await receiver();
    await expect(poster({ extraCa: undefined })(r.url(), BODY, HEADERS)).rejects.toThrow(
      /^TLS: certificate not trusted$/,
    );
    expect(r.hits).toHaveLength(0);
  });

  test('the extra CA is added to the default store, not in place of it', async () => {
    const other = await receiverPki();
    const r = await receiver();
    // A bundle of an unrelated CA does not make the receiver's CA trusted...
    await expect(poster({ extraCa: other.ca.certPem })(r.url(), BODY, HEADERS)).rejects.toThrow(
      'TLS: certificate not trusted',
    );
    // ...and a bundle of both trusts it.
    const both = await poster({ extraCa: other.ca.certPem + pki.ca.certPem })(r.url(), BODY, HEADERS);
    expect(both.status).toBe(204);
  });

  test('a DNS name: SNI and the certificate check use the name', async () => {
    const r = await receiver();
    const { resolve } = resolverAnswering(['127.0.0.1']);
    const response = await poster({ resolve })(r.url('/hook', 'receiver.test'), BODY, HEADERS);
    expect(response.status).toBe(204);
    expect(r.hits[0]!.servername).toBe('receiver.test');
    expect(r.hits[0]!.headers.host).toBe(`receiver.test:${r.port}`);
  });

  test('a certificate for another name is refused', async () => {
    const r = await receiver();
    const { resolve } = resolverAnswering(['127.0.0.1']);
    await expect(poster({ resolve })(r.url('/hook', 'elsewhere.test'), BODY, HEADERS)).rejects.toThrow(
      /^TLS: certificate does not name the host$/,
    );
    expect(r.hits).toHaveLength(0);
  });

  test('IPv6 literal [::1]: refused, and delivered when allowed', async () => {
    const r6 = await startReceiverOn6();
    if (!r6) return; // no IPv6 loopback here
    await expect(poster({ allowPrivateTargets: false })(r6.url, BODY, HEADERS)).rejects.toThrow(
      'names the loopback address ::1',
    );
    expect((await poster()(r6.url, BODY, HEADERS)).status).toBe(204);
  });
});

/** The same receiver certificate on [::1], if this machine has IPv6 loopback. */
async function startReceiverOn6(): Promise<{ url: string } | undefined> {
  const { createServer } = await import('node:https');
  const server = createServer({ cert: pki.leaf.certPem, key: pki.leaf.keyPem }, (_req, res) =>
    res.writeHead(204).end(),
  );
  const bound = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(0, '::1', () => resolve(true));
  });
  if (!bound) return undefined;
  running.push({
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return { url: `https://[::1]:${(server.address() as { port: number }).port}/hook` };
}

describe('the address is checked where the connection goes, not where the URL points', () => {
  test('a DNS name resolving to 127.0.0.1 is refused at connect time: no connection', async () => {
    const r = await receiver();
    const { resolve, calls } = resolverAnswering(['127.0.0.1']);
    await expect(
      poster({ allowPrivateTargets: false, resolve })(r.url('/hook', 'receiver.test'), BODY, HEADERS),
    ).rejects.toThrow('target address is loopback (webhooks.allowPrivateTargets)');
    expect(calls).toEqual(['receiver.test']);
    expect(r.connections()).toBe(0);
  });

  test.each([
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['::', 'unspecified'],
    ['0.0.0.0', 'unspecified'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'CGNAT'],
    ['fd00::1', 'unique-local'],
    ['10.0.0.5', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.0.1', 'private'],
    ['fe80::1', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::1', 'loopback'],
  ])('a name resolving to %s is refused (%s)', async (address, kind) => {
    const r = await receiver();
    const { resolve } = resolverAnswering([address]);
    await expect(
      poster({ allowPrivateTargets: false, resolve })(r.url('/hook', 'receiver.test'), BODY, HEADERS),
    ).rejects.toThrow(`target address is ${kind} (webhooks.allowPrivateTargets)`);
    expect(r.connections()).toBe(0);
  });

  test('a name resolving to public and private addresses connects to the public ones only', async () => {
    const r = await receiver();
    // 2001:4860:4860::8888 is public; where it cannot be reached the attempt fails, either way it
    // never lands on the receiver behind 127.0.0.1.
    const { resolve } = resolverAnswering(['127.0.0.1', '2001:4860:4860::8888']);
    await expect(
      poster({ allowPrivateTargets: false, resolve, timeoutMs: 2000 })(
        r.url('/hook', 'receiver.test'),
        BODY,
        HEADERS,
      ),
    ).rejects.toThrow();
    expect(r.connections()).toBe(0);
  });

  test('rebinding: a resolver answering public first and private after cannot reach the receiver', async () => {
    const r = await receiver();
    const { resolve, calls } = resolverAnswering(['2001:4860:4860::8888'], ['127.0.0.1']);
    const post = poster({ allowPrivateTargets: false, resolve, timeoutMs: 2000 });
    // The first delivery resolves once and connects where that answer pointed (unreachable here).
    await expect(post(r.url('/hook', 'receiver.test'), BODY, HEADERS)).rejects.toThrow();
    expect(calls).toHaveLength(1);
    // The next one resolves again, and the private answer is refused before any connection.
    await expect(post(r.url('/hook', 'receiver.test'), BODY, HEADERS)).rejects.toThrow(
      'target address is loopback (webhooks.allowPrivateTargets)',
    );
    expect(calls).toHaveLength(2);
    expect(r.connections()).toBe(0);
  });

  test('the connect-time guard refuses a socket to a private peer before a byte is sent, TLS hello included', async () => {
    const peer = await startTcpRecorder();
    running.push(peer);
    // A literal address: net.connect does not call lookup for it, the guard still sees it.
    const socket = connect({ host: '127.0.0.1', port: peer.port, servername: 'receiver.test' });
    // The URL held the address (literal): the refusal may name it.
    guardConnectedAddress(socket, false, true);
    const error = await new Promise<Error>((resolve) => socket.once('error', resolve));
    expect(error.message).toBe('target address 127.0.0.1 is loopback (webhooks.allowPrivateTargets)');
    // The peer accepted the TCP connection and then saw it close, empty.
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    await waitUntil(() => peer.connections() === 1);
    expect(peer.bytes()).toBe(0);
    // The control: without the guard the same connection sends its ClientHello at once.
    const unguarded = connect({ host: '127.0.0.1', port: peer.port, servername: 'receiver.test' });
    unguarded.on('error', () => undefined);
    await waitUntil(() => peer.bytes() > 0);
    unguarded.destroy();
    expect(peer.bytes()).toBeGreaterThan(0);
  });

  test('the guard lets an allowed socket through', async () => {
    const r = await receiver();
    const socket = connect({ host: '127.0.0.1', port: r.port, ca: pki.ca.certPem });
    guardConnectedAddress(socket, true);
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', resolve);
      socket.once('error', reject);
    });
    socket.destroy();
  });
});

async function waitUntil(probe: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !probe(); i += 1) await new Promise((r) => setTimeout(r, 10));
}

describe('what comes back', () => {
  test('a 302 is a response, its Location is not followed', async () => {
    const elsewhere = await receiver();
    const r = await receiver((_req, res) => res.writeHead(302, { location: elsewhere.url('/stolen') }).end());
    const response = await poster()(r.url(), BODY, HEADERS);
    expect(response.status).toBe(302);
    expect(elsewhere.hits).toHaveLength(0);
    expect(elsewhere.connections()).toBe(0);
  });

  test('a 100 MiB body: 64 KiB are read, then the connection is closed', async () => {
    let written = 0;
    let finished = false;
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'content-length': String(100 * MiB) });
      const pump = () => {
        while (written < 100 * MiB && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (written >= 100 * MiB) res.end(() => (finished = true));
      };
      res.on('error', () => undefined);
      pump();
    });
    const response = await poster()(r.url(), BODY, HEADERS);
    expect(response.status).toBe(200);
    expect(Buffer.byteLength(response.bodyPreview)).toBe(64 * 1024);
    expect(response.bodyPreview).toBe('x'.repeat(64 * 1024));
    // The receiver could hand over only what fits in the socket buffers before the close.
    await waitUntil(() => r.hits.length === 1 && written > 0);
    expect(finished).toBe(false);
    expect(written).toBeLessThan(100 * MiB);
  });

  test('maxResponseBytes caps the read', async () => {
    const r = await receiver((_req, res) => res.writeHead(500).end('e'.repeat(5000)));
    const response = await poster({ maxResponseBytes: 1000 })(r.url(), BODY, HEADERS);
    expect(response).toMatchObject({ status: 500, bodyPreview: 'e'.repeat(1000) });
  });

  test('headers never sent: the deadline ends it', async () => {
    const r = await receiver(() => undefined);
    await expect(poster({ timeoutMs: 300 })(r.url(), BODY, HEADERS)).rejects.toThrow(
      /^timed out after 300 ms$/,
    );
  });

  test('a body that drips: the deadline covers the whole response', async () => {
    const timers: NodeJS.Timeout[] = [];
    const r = await receiver((_req, res) => {
      res.writeHead(200);
      timers.push(setInterval(() => res.write('.'), 20));
      res.on('close', () => timers.forEach(clearInterval));
    });
    await expect(poster({ timeoutMs: 500 })(r.url(), BODY, HEADERS)).rejects.toThrow(
      /^timed out after 500 ms$/,
    );
    timers.forEach(clearInterval);
  });

  test('the default deadline is 10 s', async () => {
    const r = await receiver(() => undefined);
    await expect(poster()(r.url(), BODY, HEADERS)).rejects.toThrow(/^timed out after 10 s$/);
  }, 30_000);

  test('nothing listening: connection refused', async () => {
    const r = await receiver();
    const url = r.url();
    await r.close();
    await expect(poster()(url, BODY, HEADERS)).rejects.toThrow(/^connection refused$/);
  });

  test('a name that does not resolve', async () => {
    const resolve = async (): Promise<LookupAddress[]> => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.test'), { code: 'ENOTFOUND' });
    };
    await expect(poster({ resolve })('https://nowhere.test/hook', BODY, HEADERS)).rejects.toThrow(
      /^host name not found$/,
    );
  });

  test('a URL that is not https is refused before anything', async () => {
    await expect(poster()('http://127.0.0.1:1/hook', BODY, HEADERS)).rejects.toThrow(
      'target URL must be an https:// URL',
    );
  });
});

afterAll(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});
