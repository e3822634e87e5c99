import { TARGET_REFUSED } from './target-address-guard.js';

/** Verification errors of OpenSSL (and Node's own) that mean: nothing we trust signed this chain. */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'INVALID_CA',
  'CERT_CHAIN_TOO_LONG',
  'PATH_LENGTH_EXCEEDED',
]);

/** The other certificate verification errors Node reports (tls.TLSSocket's authorizationError). */
const REFUSED = new Set([
  'INVALID_PURPOSE',
  'CERT_REVOKED',
  'UNABLE_TO_GET_CRL',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'HOSTNAME_MISMATCH',
]);

const BY_CODE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed',
  CERT_HAS_EXPIRED: 'TLS: certificate expired',
  CERT_NOT_YET_VALID: 'TLS: certificate not yet valid',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS: certificate does not name the host',
  // OpenSSL's record layer: the peer did not speak TLS (plain HTTP on the port, say).
  EPROTO: 'TLS: handshake failed',
  ERR_INVALID_CHAR: 'invalid request header',
  ERR_INVALID_HTTP_TOKEN: 'invalid request header',
};

/**
 * A short message for why no response came, safe to store and show to an admin: the words are
 * ours, picked by the error's code, so neither a receiver's bytes nor a library's wording (which
 * may quote them) end up in it.
 */
export function outboundErrorMessage(err: unknown): string {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  if (code === TARGET_REFUSED && typeof message === 'string') return message;
  if (typeof code !== 'string') return 'connection failed';
  // Node's words for a connection closed before any response (code ECONNRESET).
  if (code === 'ECONNRESET' && message === 'socket hang up') return 'connection closed without a response';
  if (BY_CODE[code]) return BY_CODE[code];
  if (UNTRUSTED.has(code)) return 'TLS: certificate not trusted';
  if (REFUSED.has(code)) return 'TLS: certificate refused';
  if (/^ERR_(SSL|TLS)_/.test(code)) return 'TLS: handshake failed';
  if (/^HPE_/.test(code)) return 'invalid HTTP response';
  return /^[A-Z0-9_]{1,40}$/.test(code) ? `connection failed (${code})` : 'connection failed';
}
