import { codePointName } from './precis.js';

const SPACE = /\p{Zs}/u;
const OTHER_SPACE = /(?! )\p{Zs}/u;
// U+2800 BRAILLE PATTERN BLANK is a symbol (So), not a space: FreeformClass allows it, yet it
// shows as blank and pads or splits a name just like a space would.
const BLANK_SYMBOL = /\u2800/u;

/**
 * The additional mapping rule of the PRECIS Nickname profile (RFC 8266 §2.2: every space to
 * U+0020, leading and trailing spaces removed, runs of spaces collapsed to one) applied as a
 * refusal, not a rewrite, as with NFC: a name `alice\u00a0bob` beside `alice bob` would read as
 * the same, so only the form it would be mapped to is accepted. Why `text` breaks it, or
 * undefined.
 */
export function spacesProblem(text: string): string | undefined {
  const other = OTHER_SPACE.exec(text) ?? BLANK_SYMBOL.exec(text);
  if (other)
    return `must not contain ${codePointName(other[0].codePointAt(0)!)}; the only space allowed is U+0020`;
  const chars = [...text];
  if (SPACE.test(chars[0] ?? '') || SPACE.test(chars.at(-1) ?? ''))
    return 'must not begin or end with a space';
  if (text.includes('  ')) return 'must not contain two spaces in a row';
  return undefined;
}
