import { isIPv4, isIPv6 } from 'node:net';
import { ipv6Bytes } from '../config/cidr.js';

/**
 * The PROXY protocol header a TCP proxy sends before anything else on a connection
 * (HAProxy's "The PROXY protocol", versions 1 and 2): which client the proxy accepted the
 * connection from. `address` is absent when the header says to keep the connection's own
 * endpoints: the LOCAL command (the proxy's own health checks) and an unspecified or Unix family.
 */
export interface ProxyHeader {
  version: 1 | 2;
  /** Bytes the header takes at the start of the stream; what follows belongs to TLS. */
  length: number;
  source?: { address: string; port: number; family: 'IPv4' | 'IPv6' };
}

export type ProxyParse =
  { state: 'incomplete' } | { state: 'invalid'; reason: string } | { state: 'complete'; header: ProxyHeader };

export const V2_SIGNATURE = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
export const V1_SIGNATURE = Buffer.from('PROXY ', 'latin1');

/** A v1 line is at most 107 bytes with its CRLF (section 2.1). */
const V1_MAX = 107;
/**
 * The spec allows up to 16 + 65535 bytes of v2; addresses take at most 216 and the rest are TLVs
 * we ignore. Real proxies send a few hundred bytes (AWS and GCP add an endpoint id); more than
 * this is refused rather than buffered.
 */
export const V2_MAX = 4096;

const V2_ADDRESS_BYTES: Record<number, number> = { 0x1: 12, 0x2: 36, 0x3: 216 };

const invalid = (reason: string): ProxyParse => ({ state: 'invalid', reason });

/**
 * Whether `data`, the first bytes of a connection, could be a PROXY header: they are a prefix of
 * a signature or start with one. Neither signature can begin a TLS record (0x16), so an answer of
 * true is never a TLS client.
 */
export function startsLikeProxyHeader(data: Buffer): boolean {
  return [V2_SIGNATURE, V1_SIGNATURE].some((sig) => {
    const n = Math.min(sig.length, data.length);
    return n > 0 && data.subarray(0, n).equals(sig.subarray(0, n));
  });
}

/**
 * Parses the PROXY header at the start of `data` (all bytes received so far). `incomplete`
 * means more bytes may make it valid; `invalid` never becomes valid with more bytes.
 */
export function parseProxyHeader(data: Buffer): ProxyParse {
  if (data.length === 0) return { state: 'incomplete' };
  const v2Prefix = Math.min(V2_SIGNATURE.length, data.length);
  if (data.subarray(0, v2Prefix).equals(V2_SIGNATURE.subarray(0, v2Prefix))) {
    return data.length < 16 ? { state: 'incomplete' } : parseV2(data);
  }
  const v1Prefix = Math.min(V1_SIGNATURE.length, data.length);
  if (data.subarray(0, v1Prefix).equals(V1_SIGNATURE.subarray(0, v1Prefix))) {
    return data.length < V1_SIGNATURE.length ? { state: 'incomplete' } : parseV1(data);
  }
  return invalid('no PROXY protocol signature');
}

function parseV2(data: Buffer): ProxyParse {
  const versionCommand = data[12]!;
  if (versionCommand >> 4 !== 0x2) return invalid('v2: unsupported version');
  const command = versionCommand & 0x0f;
  if (command > 0x1) return invalid('v2: unknown command');
  const family = data[13]! >> 4;
  const transport = data[13]! & 0x0f;
  if (family > 0x3) return invalid('v2: unknown address family');
  if (transport > 0x2) return invalid('v2: unknown transport');
  const length = 16 + data.readUInt16BE(14);
  if (length > V2_MAX) return invalid('v2: header too long');
  // Section 2.2: LOCAL ignores whatever address block follows, whatever its family.
  if (command === 0x1 && family !== 0x0) {
    if (transport === 0x2) return invalid('v2: datagram transport on a stream connection');
    if (length - 16 < V2_ADDRESS_BYTES[family]!) return invalid('v2: address block too short');
  }
  if (data.length < length) return { state: 'incomplete' };
  const header: ProxyHeader = { version: 2, length };
  if (command === 0x0 || transport === 0x0) return { state: 'complete', header };
  if (family === 0x1) {
    header.source = {
      address: [...data.subarray(16, 20)].join('.'),
      port: data.readUInt16BE(24),
      family: 'IPv4',
    };
  } else if (family === 0x2) {
    header.source = {
      address: formatIPv6(data.subarray(16, 32)),
      port: data.readUInt16BE(48),
      family: 'IPv6',
    };
  }
  return { state: 'complete', header };
}

const PORT = /^(0|[1-9][0-9]{0,4})$/;
const PRINTABLE = /^[\x20-\x7e]*$/;
const PRINTABLE_SO_FAR = /^[\x20-\x7e]*\r?$/;

function parseV1(data: Buffer): ProxyParse {
  const end = data.subarray(0, V1_MAX).indexOf('\r\n');
  if (end < 0) {
    if (data.length >= V1_MAX) return invalid('v1: no CRLF within 107 bytes');
    // Any byte outside printable ASCII can never be part of a valid line.
    return PRINTABLE_SO_FAR.test(data.toString('latin1')) ? { state: 'incomplete' } : invalid('v1: bad byte');
  }
  const line = data.subarray(0, end).toString('latin1');
  if (!PRINTABLE.test(line)) return invalid('v1: bad byte');
  const header: ProxyHeader = { version: 1, length: end + 2 };
  const fields = line.split(' ');
  if (fields[1] === 'UNKNOWN') return { state: 'complete', header };
  if (fields.length !== 6) return invalid('v1: wrong number of fields');
  const [, protocol, source, destination, sourcePort, destinationPort] = fields as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const isFamily = protocol === 'TCP4' ? isIPv4 : protocol === 'TCP6' ? isIPv6 : undefined;
  if (!isFamily) return invalid('v1: unknown protocol');
  if (!isFamily(source) || !isFamily(destination)) return invalid('v1: address does not match protocol');
  // Section 2.1 carries plain addresses. Node's isIPv6 also takes a zone index (fe80::1%eth0),
  // which names an interface of the proxy's host and would travel into logs and audit events.
  if (source.includes('%') || destination.includes('%')) return invalid('v1: address with a zone index');
  for (const port of [sourcePort, destinationPort]) {
    if (!PORT.test(port) || Number(port) > 65535) return invalid('v1: bad port');
  }
  header.source = {
    // The text v2 would give for the same bytes, whatever spelling the proxy chose.
    address: protocol === 'TCP4' ? source : formatIPv6(Buffer.from(ipv6Bytes(source))),
    port: Number(sourcePort),
    family: protocol === 'TCP4' ? 'IPv4' : 'IPv6',
  };
  return { state: 'complete', header };
}

/** RFC 5952 text of 16 address bytes; IPv4-mapped addresses as `::ffff:a.b.c.d`. */
export function formatIPv6(bytes: Buffer): string {
  if (bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) {
    return `::ffff:${[...bytes.subarray(12, 16)].join('.')}`;
  }
  const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2));
  let best = { at: -1, length: 1 };
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.length) best = { at: i, length: j - i };
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(':');
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.length).join(':')}`;
}
