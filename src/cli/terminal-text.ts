/**
 * Characters a terminal acts on or does not show: C0 controls, DEL, C1 (U+0080–U+009F; U+009B
 * is an 8-bit CSI), every format character (category Cf: the bidirectional controls, which make
 * one name look like another, the zero-width characters, the soft hyphen, U+FEFF, the tag
 * characters), every other default-ignorable code point (variation selectors, Hangul fillers),
 * the line and paragraph separators, noncharacters and lone surrogates. A name holding one of
 * these reads like another name; the server refuses them in new names, older rows may hold them.
 */
const SHOWN_ESCAPED =
  '\\u0000-\\u001f\\u007f-\\u009f\\p{Cf}\\p{Default_Ignorable_Code_Point}\\p{Zl}\\p{Zp}' +
  '\\p{Noncharacter_Code_Point}\\p{Cs}';
const UNSAFE = new RegExp(`[${SHOWN_ESCAPED}]`, 'gu');
const UNSAFE_BUT_NEWLINE = new RegExp(`(?!\\n)[${SHOWN_ESCAPED}]`, 'gu');

/** A letter or mark outside ASCII: the neighbours a joiner has in Persian or Indic writing. */
const SCRIPT_LETTER = /^(?![\p{ASCII}])[\p{L}\p{M}]$/u;

/**
 * ZWNJ and ZWJ shape Persian, Arabic and Indic names and are shown as they are between two such
 * letters; anywhere else (`al\u200cice`) they only hide, and are escaped.
 */
function joinerBetweenLetters(text: string, offset: number): boolean {
  const before = [...text.slice(Math.max(0, offset - 2), offset)].pop() ?? '';
  const after = [...text.slice(offset + 1, offset + 3)][0] ?? '';
  return SCRIPT_LETTER.test(before) && SCRIPT_LETTER.test(after);
}

/** Every UTF-16 unit as `\uXXXX`: a character beyond U+FFFF becomes its JSON surrogate pair. */
const escape = (c: string) =>
  Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join('');

/**
 * `text` safe to write to a terminal: each character above is shown as its `\uXXXX` escape, so
 * ESC reads `\u001b` and cannot move the cursor, clear the screen or set the title, and
 * `\u200balice` does not pass for `alice`. The escape is JSON's own, so `--json` output stays
 * valid JSON with the same values. With `keepNewlines`, LF passes: for output whose line breaks
 * are the CLI's own formatting (a table, pretty JSON); values inside it are escaped first, so
 * their line breaks are already shown as `\u000a`.
 */
export function terminalText(text: string, options: { keepNewlines?: boolean } = {}): string {
  return text.replace(
    options.keepNewlines ? UNSAFE_BUT_NEWLINE : UNSAFE,
    (c, offset: number, whole: string) =>
      (c === '\u200c' || c === '\u200d') && joinerBetweenLetters(whole, offset) ? c : escape(c),
  );
}
