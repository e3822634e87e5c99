import { isIPv4, isIPv6 } from 'node:net';

export interface Cidr {
  network: string;
  prefix: number;
  type: 'ipv4' | 'ipv6';
}

/** `10.0.0.0/8`, `2001:db8::/32`, or a bare address (a /32 or /128); undefined when malformed. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const network = slash < 0 ? text : text.slice(0, slash);
  const type = isIPv4(network) ? 'ipv4' : isIPv6(network) ? 'ipv6' : undefined;
  if (!type) return undefined;
  const max = type === 'ipv4' ? 32 : 128;
  if (slash < 0) return { network, prefix: max, type };
  const bits = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(bits) || Number(bits) > max) return undefined;
  return { network, prefix: Number(bits), type };
}
