/*
 * The cursors of the audit event list: a position in the trail, `(tx, id)`, as opaque base64url
 * text, so that clients cannot depend on what a position is made of. Clients pass them back
 * unchanged; anything else is a 400 naming the parameter.
 */
import type { TrailPosition } from '../db/trail-query.js';
import { validationError } from '../errors/app-error.js';

const MAX_XID8 = 2n ** 64n - 1n;
const MAX_BIGINT = 2n ** 63n - 1n;
/** Far longer than any cursor this encodes; bounds the work of decoding hostile input. */
const MAX_CURSOR_LENGTH = 64;
const PLAIN = /^(0|[1-9][0-9]{0,19}):(0|[1-9][0-9]{0,18})$/;

export function encodeTrailCursor(p: TrailPosition): string {
  return Buffer.from(`${p.tx}:${p.id}`, 'utf8').toString('base64url');
}

/** The position `text` encodes; anything this server did not write is refused. */
export function decodeTrailCursor(text: string, parameter: string): TrailPosition {
  const refuse = () => validationError(parameter, 'is not a cursor this list returned');
  if (text.length === 0 || text.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(text)) throw refuse();
  const match = PLAIN.exec(Buffer.from(text, 'base64url').toString('utf8'));
  if (!match) throw refuse();
  const position = { tx: match[1]!, id: match[2]! };
  // One spelling per position: a re-encoding must give the same text back.
  if (encodeTrailCursor(position) !== text) throw refuse();
  if (BigInt(position.tx) > MAX_XID8 || BigInt(position.id) > MAX_BIGINT) throw refuse();
  return position;
}
