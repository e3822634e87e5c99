import { createHash } from 'node:crypto';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

/** RFC 8705 §3.1 `x5t#S256`: the base64url SHA-256 of a certificate's DER. */
export const certX5tS256 = (der: Buffer): string => createHash('sha256').update(der).digest('base64url');

/** Per TLS connection: the thumbprint of the leaf it presented, or null for none. */
const byConnection = new WeakMap<Socket, string | null>();

/**
 * The thumbprint of the client certificate the TLS connection `socket` presented in its
 * handshake; undefined when it presented none, or is no TLS connection. Worked out once per
 * connection: its certificate cannot change afterwards, since the listener refuses renegotiation
 * (https-listeners.ts). Every request over it is compared with this, never with anything kept
 * beside a token.
 */
export function presentedCertX5tS256(socket: Socket | undefined): string | undefined {
  if (!socket) return undefined;
  const known = byConnection.get(socket);
  if (known !== undefined) return known ?? undefined;
  const tls = socket as Partial<TLSSocket>;
  if (typeof tls.getPeerX509Certificate !== 'function') return undefined;
  const leaf = tls.getPeerX509Certificate();
  const thumbprint = leaf ? certX5tS256(leaf.raw) : null;
  byConnection.set(socket, thumbprint);
  return thumbprint ?? undefined;
}
