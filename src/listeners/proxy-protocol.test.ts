import { describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import {
  formatIPv6,
  parseProxyHeader,
  startsLikeProxyHeader,
  V1_SIGNATURE,
  V2_MAX,
  V2_SIGNATURE,
  type ProxyParse,
} from './proxy-protocol.js';

const SEED = Number(process.env.FUZZ_SEED ?? 42);
const runs = { seed: SEED, numRuns: 500 };

/** A v2 header as a sender writes it (section 2.2). */
function v2(o: {
  command?: number;
  family?: number;
  transport?: number;
  address?: Buffer;
  tlvs?: Buffer;
  version?: number;
  length?: number;
}): Buffer {
  const body = Buffer.concat([o.address ?? Buffer.alloc(0), o.tlvs ?? Buffer.alloc(0)]);
  const head = Buffer.alloc(4);
  head[0] = ((o.version ?? 2) << 4) | (o.command ?? 1);
  head[1] = ((o.family ?? 1) << 4) | (o.transport ?? 1);
  head.writeUInt16BE(o.length ?? body.length, 2);
  return Buffer.concat([V2_SIGNATURE, head, body]);
}

function inet4(src: number[], sport: number): Buffer {
  const b = Buffer.alloc(12);
  Buffer.from(src).copy(b, 0);
  Buffer.from([10, 0, 0, 1]).copy(b, 4);
  b.writeUInt16BE(sport, 8);
  b.writeUInt16BE(443, 10);
  return b;
}

function inet6(src: Buffer, sport: number): Buffer {
  const b = Buffer.alloc(36);
  src.copy(b, 0);
  b.writeUInt16BE(sport, 32);
  b.writeUInt16BE(443, 34);
  return b;
}

const complete = (r: ProxyParse) => {
  if (r.state !== 'complete') throw new Error(`expected a complete header, got ${JSON.stringify(r)}`);
  return r.header;
};

const ipv4 = fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 });
const port = fc.integer({ min: 0, max: 65535 });
const tlvs = fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a));
const trailing = fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a));

describe('PROXY protocol v2', () => {
  test('an IPv4 PROXY header yields the source, whatever TLVs and bytes follow', () => {
    fc.assert(
      fc.property(ipv4, port, tlvs, trailing, (src, sport, t, rest) => {
        const header = v2({ address: inet4(src, sport), tlvs: t });
        const parsed = complete(parseProxyHeader(Buffer.concat([header, rest])));
        expect(parsed).toEqual({
          version: 2,
          length: header.length,
          source: { address: src.join('.'), port: sport, family: 'IPv4' },
        });
      }),
      runs,
    );
  });

  test('an IPv6 PROXY header yields the source in RFC 5952 form', () => {
    const src = Buffer.from('20010db8000000000000000000000007', 'hex');
    expect(complete(parseProxyHeader(v2({ family: 2, address: inet6(src, 5000) }))).source).toEqual({
      address: '2001:db8::7',
      port: 5000,
      family: 'IPv6',
    });
  });

  test('LOCAL, UNSPEC and Unix keep the connection address', () => {
    expect(complete(parseProxyHeader(v2({ command: 0, family: 0, transport: 0 })))).toEqual({
      version: 2,
      length: 16,
    });
    // LOCAL ignores an address block, even one too short for its family.
    expect(complete(parseProxyHeader(v2({ command: 0, address: Buffer.alloc(3) }))).source).toBeUndefined();
    expect(complete(parseProxyHeader(v2({ family: 0, transport: 0 }))).source).toBeUndefined();
    expect(complete(parseProxyHeader(v2({ family: 3, address: Buffer.alloc(216) }))).source).toBeUndefined();
  });

  test('every strict prefix of a valid header is incomplete, never invalid or complete', () => {
    fc.assert(
      fc.property(ipv4, port, tlvs, (src, sport, t) => {
        const header = v2({ address: inet4(src, sport), tlvs: t });
        for (let n = 0; n < header.length; n++) {
          expect(parseProxyHeader(header.subarray(0, n)).state).toBe('incomplete');
        }
      }),
      { ...runs, numRuns: 50 },
    );
  });

  test('a wrong signature byte is refused', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 11 }), fc.integer({ min: 1, max: 255 }), (at, flip) => {
        const header = v2({ address: inet4([1, 2, 3, 4], 1) });
        header[at] ^= flip;
        // Unless the damage happens to spell the v1 signature, which cannot start with CR.
        expect(parseProxyHeader(header).state).toBe('invalid');
      }),
      runs,
    );
  });

  test('a wrong version, command, family or transport is refused', () => {
    expect(parseProxyHeader(v2({ version: 1, address: inet4([1, 2, 3, 4], 1) })).state).toBe('invalid');
    expect(parseProxyHeader(v2({ version: 3, address: inet4([1, 2, 3, 4], 1) })).state).toBe('invalid');
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 15 }), (command) => {
        expect(parseProxyHeader(v2({ command, address: inet4([1, 2, 3, 4], 1) })).state).toBe('invalid');
      }),
      runs,
    );
    fc.assert(
      fc.property(fc.integer({ min: 4, max: 15 }), (family) => {
        expect(parseProxyHeader(v2({ family, address: Buffer.alloc(216) })).state).toBe('invalid');
      }),
      runs,
    );
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 15 }), (transport) => {
        expect(parseProxyHeader(v2({ transport, address: inet4([1, 2, 3, 4], 1) })).state).toBe('invalid');
      }),
      runs,
    );
    // A datagram header cannot describe this stream connection.
    expect(parseProxyHeader(v2({ transport: 2, address: inet4([1, 2, 3, 4], 1) })).state).toBe('invalid');
  });

  test('an address block shorter than its family needs is refused, as soon as the length says so', () => {
    expect(parseProxyHeader(v2({ family: 1, address: Buffer.alloc(11) })).state).toBe('invalid');
    expect(parseProxyHeader(v2({ family: 2, address: Buffer.alloc(35) })).state).toBe('invalid');
    expect(parseProxyHeader(v2({ family: 3, address: Buffer.alloc(215) })).state).toBe('invalid');
    expect(parseProxyHeader(v2({ family: 2, address: Buffer.alloc(12) }).subarray(0, 16)).state).toBe(
      'invalid',
    );
  });

  test('an oversized header is refused from its first 16 bytes, without waiting for the rest', () => {
    fc.assert(
      fc.property(fc.integer({ min: V2_MAX - 16 + 1, max: 65535 }), (length) => {
        const head = v2({ address: inet4([1, 2, 3, 4], 1), length }).subarray(0, 16);
        expect(parseProxyHeader(head)).toEqual({ state: 'invalid', reason: 'v2: header too long' });
      }),
      runs,
    );
    const largest = v2({ address: inet4([1, 2, 3, 4], 1), tlvs: Buffer.alloc(V2_MAX - 16 - 12) });
    expect(complete(parseProxyHeader(largest)).length).toBe(V2_MAX);
  });
});

describe('PROXY protocol v1', () => {
  const line = (text: string) => Buffer.from(text, 'latin1');

  test('TCP4 and TCP6 lines yield the source; the bytes after CRLF are not part of it', () => {
    fc.assert(
      fc.property(ipv4, port, trailing, (src, sport, rest) => {
        const text = `PROXY TCP4 ${src.join('.')} 10.0.0.1 ${sport} 443\r\n`;
        const parsed = complete(parseProxyHeader(Buffer.concat([line(text), rest])));
        expect(parsed).toEqual({
          version: 1,
          length: text.length,
          source: { address: src.join('.'), port: sport, family: 'IPv4' },
        });
      }),
      runs,
    );
    expect(complete(parseProxyHeader(line('PROXY TCP6 2001:DB8::7 ::1 5000 443\r\n'))).source).toEqual({
      address: '2001:db8::7',
      port: 5000,
      family: 'IPv6',
    });
    expect(complete(parseProxyHeader(line('PROXY UNKNOWN\r\n'))).source).toBeUndefined();
    expect(complete(parseProxyHeader(line('PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n'))).source).toBeUndefined();
  });

  test('malformed lines are refused', () => {
    for (const text of [
      'PROXY TCP4 1.2.3.4 10.0.0.1 4444\r\n', // a field missing
      'PROXY TCP4 1.2.3.4  10.0.0.1 4444 443\r\n', // two spaces
      'PROXY TCP4 ::1 10.0.0.1 4444 443\r\n', // family mismatch
      'PROXY TCP6 1.2.3.4 ::1 4444 443\r\n',
      'PROXY UDP4 1.2.3.4 10.0.0.1 4444 443\r\n',
      'PROXY TCP4 1.2.3.4 10.0.0.1 65536 443\r\n',
      'PROXY TCP4 1.2.3.4 10.0.0.1 0443 443\r\n',
      'PROXY TCP4 1.2.3.4 10.0.0.1 -1 443\r\n',
      'PROXY TCP4 1.2.3.256 10.0.0.1 1 443\r\n',
      'PROXY TCP4 1.2.3.4 10.0.0.1 1 443\n', // LF without CR
      'PROXY TCP4 1.2.3.4\x00 10.0.0.1 1 443\r\n',
      'PROXY UNKNOWN \x01\r\n',
      'PROXY TCP6 fe80::1%eth0 ::1 4444 443\r\n', // a zone index: section 2.1 has plain addresses
      'PROXY TCP6 2001:db8::7 fe80::1%1 4444 443\r\n',
    ]) {
      expect([text, parseProxyHeader(line(text)).state]).toEqual([text, 'invalid']);
    }
  });

  test('a TCP6 source reads as v2 would give it, in RFC 5952 form, however the proxy spelled it', () => {
    expect(complete(parseProxyHeader(line('PROXY TCP6 2001:0DB8:0:0:0:0:0:7 ::1 1 2\r\n'))).source).toEqual({
      address: '2001:db8::7',
      port: 1,
      family: 'IPv6',
    });
    fc.assert(
      fc.property(fc.ipV6(), (address) => {
        const parsed = complete(parseProxyHeader(line(`PROXY TCP6 ${address} ::1 1 2\r\n`)));
        // WHATWG URL serializes IPv6 hosts the RFC 5952 way, but writes IPv4-mapped ones in hex.
        const hex = new URL(`http://[${address}]`).hostname.slice(1, -1);
        const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(hex);
        const expected = mapped
          ? `::ffff:${[mapped[1]!, mapped[2]!].flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]).join('.')}`
          : hex;
        expect(parsed.source!.address).toBe(expected);
      }),
      runs,
    );
  });

  test('a line without CRLF in its first 107 bytes is refused; a shorter one waits', () => {
    const long = line(`PROXY UNKNOWN ${'x'.repeat(120)}`);
    expect(parseProxyHeader(long.subarray(0, 106)).state).toBe('incomplete');
    expect(parseProxyHeader(long.subarray(0, 107)).state).toBe('invalid');
    const maximal = line(`PROXY UNKNOWN ${'x'.repeat(107 - 16)}\r\n`);
    expect(maximal.length).toBe(107);
    expect(parseProxyHeader(maximal).state).toBe('complete');
  });

  test('every strict prefix of a valid line is incomplete', () => {
    const text = line('PROXY TCP6 2001:db8::7 2001:db8::1 65535 443\r\n');
    for (let n = 0; n < text.length; n++)
      expect(parseProxyHeader(text.subarray(0, n)).state).toBe('incomplete');
  });
});

describe('any bytes', () => {
  const headerLike = fc.oneof(
    fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)),
    fc
      .tuple(fc.constantFrom(V2_SIGNATURE, V1_SIGNATURE), fc.uint8Array({ maxLength: 300 }))
      .map(([sig, rest]) => Buffer.concat([sig, Buffer.from(rest)])),
    fc
      .tuple(fc.uint8Array({ minLength: 4, maxLength: 4 }), fc.uint8Array({ maxLength: 300 }))
      .map(([head, rest]) => Buffer.concat([V2_SIGNATURE, Buffer.from(head), Buffer.from(rest)])),
  );

  test('never throw; a complete header lies within the bytes; invalid stays invalid with more bytes', () => {
    fc.assert(
      fc.property(headerLike, trailing, (data, more) => {
        const r = parseProxyHeader(data);
        expect(['incomplete', 'invalid', 'complete']).toContain(r.state);
        if (r.state === 'complete') {
          expect(r.header.length).toBeLessThanOrEqual(Math.min(data.length, V2_MAX));
          expect(parseProxyHeader(Buffer.concat([data, more]))).toEqual(r);
        }
        if (r.state === 'invalid')
          expect(parseProxyHeader(Buffer.concat([data, more])).state).toBe('invalid');
        // Incomplete is bounded: no sender keeps us buffering past the largest header.
        if (r.state === 'incomplete') expect(data.length).toBeLessThan(V2_MAX);
      }),
      { ...runs, numRuns: 3000 },
    );
  });

  test('a TLS ClientHello never looks like a PROXY header; both signatures do', () => {
    expect(startsLikeProxyHeader(Buffer.from([0x16, 0x03, 0x01]))).toBe(false);
    expect(startsLikeProxyHeader(Buffer.from('GET / HTTP/1.1\r\n'))).toBe(false);
    expect(startsLikeProxyHeader(V2_SIGNATURE.subarray(0, 1))).toBe(true);
    expect(startsLikeProxyHeader(Buffer.from('PROX'))).toBe(true);
    expect(startsLikeProxyHeader(v2({ address: inet4([1, 2, 3, 4], 1) }))).toBe(true);
  });
});

describe('formatIPv6', () => {
  test.each([
    ['00000000000000000000000000000001', '::1'],
    ['00000000000000000000000000000000', '::'],
    ['20010db8000000010000000000000001', '2001:db8:0:1::1'],
    ['20010db8000000000001000000000001', '2001:db8::1:0:0:1'],
    ['20010db8000100010001000100010001', '2001:db8:1:1:1:1:1:1'],
    ['20010db8000000010001000100010001', '2001:db8:0:1:1:1:1:1'],
    ['00000000000000000000ffffc0000207', '::ffff:192.0.2.7'],
  ])('%s → %s', (hex, text) => {
    expect(formatIPv6(Buffer.from(hex, 'hex'))).toBe(text);
  });
});
