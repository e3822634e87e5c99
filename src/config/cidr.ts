import { isIPv4, isIPv6 } from 'node:net';

export interface Cidr {
  network: string;
  prefix: number;
  type: 'ipv4' | 'ipv6';
}

/** The 16 bytes of an IPv6 address (as `isIPv6` accepts it, without a zone). */
export function ipv6Bytes(address: string): number[] {
  const [head = '', tail] = address.split('::') as [string, string?];
  const groups = (part: string) => {
    if (part === '') return [];
    const words = part.split(':');
    const last = words[words.length - 1]!;
    if (!isIPv4(last)) return words.map((w) => parseInt(w, 16));
    const [a, b, c, d] = last.split('.').map(Number) as [number, number, number, number];
    return [...words.slice(0, -1).map((w) => parseInt(w, 16)), (a << 8) | b, (c << 8) | d];
  };
  const front = groups(head);
  const back = tail === undefined ? [] : groups(tail);
  const words = [...front, ...Array<number>(8 - front.length - back.length).fill(0), ...back];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

/** `a.b.c.d` when `address` is the IPv4-mapped IPv6 address `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2). */
export function mappedIPv4(address: string): string | undefined {
  if (!isIPv6(address) || address.includes('%')) return undefined;
  const bytes = ipv6Bytes(address);
  const mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return mapped ? bytes.slice(12).join('.') : undefined;
}

/**
 * `10.0.0.0/8`, `2001:db8::/32`, or a bare address (a /32 or /128); undefined when malformed.
 * An IPv4-mapped range (`::ffff:10.0.0.0/104`) is returned as the IPv4 range it stands for
 * (`10.0.0.0/8`); one with a prefix under /96 is malformed, see cidrProblem.
 */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const network = slash < 0 ? text : text.slice(0, slash);
  const type = isIPv4(network) ? 'ipv4' : isIPv6(network) && !network.includes('%') ? 'ipv6' : undefined;
  if (!type) return undefined;
  const max = type === 'ipv4' ? 32 : 128;
  const bits = slash < 0 ? String(max) : text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(bits) || Number(bits) > max) return undefined;
  const prefix = Number(bits);
  const v4 = type === 'ipv6' ? mappedIPv4(network) : undefined;
  if (v4 !== undefined) return prefix >= 96 ? { network: v4, prefix: prefix - 96, type: 'ipv4' } : undefined;
  return { network, prefix, type };
}

/** Why `text` is no usable address or range, or undefined when it is one. */
export function cidrProblem(text: string): string | undefined {
  const slash = text.indexOf('/');
  const network = slash < 0 ? text : text.slice(0, slash);
  if (parseCidr(text) !== undefined) return undefined;
  if (mappedIPv4(network) !== undefined) {
    // ::ffff:10.0.0.0/8 reads like 10/8 but is ::/8 of IPv6, which holds every IPv4-mapped address.
    return 'must be an address or CIDR; an IPv4-mapped range needs a prefix of at least 96 (::ffff:10.0.0.0/104 is 10.0.0.0/8): write the IPv4 range instead';
  }
  return 'must be an address or CIDR';
}
