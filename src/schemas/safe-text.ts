import { z } from 'zod';

const LONE_SURROGATE = /\p{Cs}/u;

/**
 * C0 control characters other than TAB, LF and CR, and UTF-16 surrogates without their pair. NUL
 * cannot be stored in PostgreSQL text or jsonb at all, jsonb refuses a lone surrogate, and none
 * of them belongs in a name, id, code, token or password that a client could type; TAB, LF and
 * CR do occur in legitimate text (PEM, descriptions).
 */
export function isForbidden(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return true;
  }
  return LONE_SURROGATE.test(text);
}

export const CONTROL_REASON =
  'must not contain control characters other than tab, line feed and carriage return, nor unpaired surrogates';

/**
 * Every C0 control (TAB, LF and CR included), DEL, C1 (U+0080–U+009F, where U+009B is an 8-bit
 * CSI) and the bidirectional formatting characters (U+061C, U+200E/F, U+202A–U+202E,
 * U+2066–U+2069). Names, usernames, ids and attributes are shown on one line in tables and
 * terminals: a line break there forges a row, an escape drives the terminal and a bidi override
 * shows one name as another (docs/security.md, input rules).
 */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const NOT_IN_A_LINE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/u;

/** isForbidden, plus what must not appear in single-line text (see NOT_IN_A_LINE). */
export function isForbiddenInLine(text: string): boolean {
  return NOT_IN_A_LINE.test(text) || LONE_SURROGATE.test(text);
}

export const LINE_REASON =
  'must be a single line without control characters (C0, DEL, C1) or bidirectional formatting characters, nor unpaired surrogates';

/**
 * Text stored in PostgreSQL: it cannot hold NUL, which would otherwise surface as a 500. A string
 * over `max` is refused by the length alone: zod otherwise runs every later check too, and the
 * rules some fields add (PRECIS for usernames) would then read a string as long as the body.
 */
export const text = (max: number) =>
  z
    .string()
    .max(max, { abort: true })
    .refine((s) => !s.includes('\0'), 'must not contain NUL characters');

/** Text shown on one line (names, ids, usernames, attributes): see isForbiddenInLine. */
export const line = (max: number) => text(max).refine((s) => !isForbiddenInLine(s), LINE_REASON);
