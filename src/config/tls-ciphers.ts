import { DEFAULT_CIPHERS, getCiphers } from 'node:tls';

/**
 * TLS 1.2 suites offered by default: ECDHE (forward secrecy) with an AEAD cipher only. The CBC
 * suites of Node's default list are left out (MAC-then-encrypt, the padding-oracle family of
 * attacks; RFC 9325 §4.2 recommends these AEAD suites).
 */
export const DEFAULT_TLS12_CIPHERS: readonly string[] = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
];

// Node takes TLS 1.3 suites from the same string (the TLS_* names) and turns TLS 1.3 off when the
// string names none: Node's own TLS 1.3 suites are always kept.
const TLS13_SUITES = DEFAULT_CIPHERS.split(':').filter((s) => s.startsWith('TLS_'));
const KNOWN = new Set(getCiphers().map((s) => s.toUpperCase()));

/** Why `name` cannot be a configured TLS 1.2 suite, or undefined. */
export function cipherProblem(name: string): string | undefined {
  if (name.startsWith('TLS_')) return `${name}: TLS 1.3 suites are not configurable`;
  if (!KNOWN.has(name)) return `${name} is not a cipher suite name this OpenSSL knows`;
  return undefined;
}

/** The configured suites that the default list does not offer. */
export const widenedCiphers = (tls12: readonly string[]): string[] =>
  tls12.filter((s) => !DEFAULT_TLS12_CIPHERS.includes(s));

/** The `ciphers` option of a TLS server: Node's TLS 1.3 suites, then these TLS 1.2 ones. */
export const cipherString = (tls12: readonly string[] = DEFAULT_TLS12_CIPHERS): string =>
  [...TLS13_SUITES, ...tls12].join(':');
