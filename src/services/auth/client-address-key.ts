import { isIPv6 } from 'node:net';

/**
 * What per-address limits (the hourly login ceiling, request rate limits) count under: an IPv4 address (also when IPv4-mapped), or the /64
 * network of an IPv6 address — one host usually holds a whole /64 (RFC 4291 §2.5.1), so counting
 * single IPv6 addresses would give it unlimited guesses.
 */
export function clientAddressKey(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail] = address.split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
