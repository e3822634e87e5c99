import { isIPv4, isIPv6 } from 'node:net';
import { ipv6Bytes } from '../../config/cidr.js';

/** Why an address is no place to send a webhook to (the word used in the refusal). */
export type PrivateAddressKind =
  | 'private'
  | 'loopback'
  | 'link-local'
  | 'CGNAT'
  | 'unique-local'
  | 'multicast'
  | 'unspecified'
  | 'broadcast'
  | 'reserved'
  | 'documentation';

type Range = readonly [network: readonly number[], prefix: number, kind: PrivateAddressKind];

/** IANA IPv4 special-purpose ranges that no public receiver lives in (RFC 6890 and its updates). */
const IPV4_RANGES: readonly Range[] = [
  [[255, 255, 255, 255], 32, 'broadcast'],
  [[0, 0, 0, 0], 8, 'unspecified'],
  [[10, 0, 0, 0], 8, 'private'],
  [[100, 64, 0, 0], 10, 'CGNAT'],
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link-local'],
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'],
  [[192, 0, 2, 0], 24, 'documentation'],
  [[192, 88, 99, 0], 24, 'reserved'], // the deprecated 6to4 relay anycast (RFC 7526)
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'reserved'], // benchmarking (RFC 2544)
  [[198, 51, 100, 0], 24, 'documentation'],
  [[203, 0, 113, 0], 24, 'documentation'],
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'],
];

/**
 * IPv6 ranges refused outright. The forms that carry an IPv4 address (mapped, compatible, NAT64
 * 64:ff9b::/96, 6to4) are judged by that address instead, before this table.
 */
const IPV6_RANGES: readonly Range[] = [
  [[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, 'private'], // local-use NAT64 (RFC 8215)
  [[0x01, 0x00], 64, 'reserved'], // discard-only (RFC 6666)
  [[0x20, 0x01, 0x00, 0x00], 32, 'reserved'], // Teredo: an IPv4 address behind a relay
  [[0x20, 0x01, 0x00, 0x02, 0x00, 0x00], 48, 'reserved'], // benchmarking (RFC 5180)
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'documentation'],
  [[0x3f, 0xff], 20, 'documentation'], // RFC 9637
  [[0xfc], 7, 'unique-local'],
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfe, 0xc0], 10, 'private'], // site-local, deprecated (RFC 3879)
  [[0xff], 8, 'multicast'],
];

function within(bytes: readonly number[], [network, prefix]: Range): boolean {
  for (let bit = 0; bit < prefix; bit += 8) {
    const mask = prefix - bit >= 8 ? 0xff : (0xff << (8 - (prefix - bit))) & 0xff;
    if (((bytes[bit / 8]! ^ (network[bit / 8] ?? 0)) & mask) !== 0) return false;
  }
  return true;
}

function ipv4Kind(bytes: readonly number[]): PrivateAddressKind | undefined {
  return IPV4_RANGES.find((range) => within(bytes, range))?.[2];
}

const zeros = (bytes: readonly number[], from: number, to: number) =>
  bytes.slice(from, to).every((b) => b === 0);

/** The IPv4 address an IPv6 address stands for, as far as where a connection ends up goes. */
function embeddedIPv4(b: readonly number[]): number[] | undefined {
  // ::ffff:a.b.c.d, mapped (RFC 4291 §2.5.5.2).
  if (zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12);
  // ::ffff:0:a.b.c.d, translated (RFC 2765 §2.1).
  if (zeros(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(b, 10, 12)) return b.slice(12);
  // ::a.b.c.d compatible (RFC 4291 §2.5.5.1, deprecated); :: and ::1 fall in it too.
  if (zeros(b, 0, 12)) return b.slice(12);
  // 64:ff9b::/96, the well-known NAT64 prefix (RFC 6052 §2.1).
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(b, 4, 12)) return b.slice(12);
  // 2002:a.b.c.d::/48, 6to4 (RFC 3056).
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6);
  return undefined;
}

function ipv6Kind(address: string): PrivateAddressKind | undefined {
  const b = ipv6Bytes(address);
  if (zeros(b, 0, 16)) return 'unspecified';
  if (zeros(b, 0, 15) && b[15] === 1) return 'loopback';
  const v4 = embeddedIPv4(b);
  if (v4) return ipv4Kind(v4);
  const listed = IPV6_RANGES.find((range) => within(b, range))?.[2];
  if (listed) return listed;
  // Only 2000::/3 is allocated for global unicast (RFC 4291 §2.4); the rest is reserved.
  return (b[0]! & 0xe0) === 0x20 ? undefined : 'reserved';
}

/**
 * Why `address` (an IPv4 or IPv6 literal, brackets and zone allowed) must not be a webhook's
 * target, or undefined for a public unicast address. Anything that is not an address is 'reserved':
 * a caller never connects to what this could not judge.
 */
export function privateAddressKind(address: string): PrivateAddressKind | undefined {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  if (isIPv4(bare)) return ipv4Kind(bare.split('.').map(Number));
  if (isIPv6(bare)) return ipv6Kind(bare);
  return 'reserved';
}
