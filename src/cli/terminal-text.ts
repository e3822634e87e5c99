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
const ALWAYS = new RegExp(`^[${SHOWN_ESCAPED}]$`, 'u');
/**
 * Also looked at: every space other than U+0020 (a no-break or ideographic space makes
 * `alice bob` two names), U+2800 (blank braille, a symbol that shows as a space) and every
 * combining mark, shown only where it sits on a letter (see markOnLetter).
 */
const LOOKED_AT = `[${SHOWN_ESCAPED}\\u2800\\p{M}]|(?! )\\p{Zs}`;
const UNSAFE = new RegExp(LOOKED_AT, 'gu');
const UNSAFE_BUT_NEWLINE = new RegExp(`(?!\\n)(?:${LOOKED_AT})`, 'gu');

/** A letter or mark outside ASCII: the neighbours a joiner has in Persian or Indic writing. */
const SCRIPT_LETTER = /^(?![\p{ASCII}])[\p{L}\p{M}]$/u;
const MARK = /^\p{M}$/u;
/** What a mark may sit on: not the start, not ASCII (Latin letters come precomposed in NFC), not a space or control. */
const BASE = /^[^\p{ASCII}\p{Z}\p{C}]$/u;
/**
 * Viramas that show nothing and only stack the next consonant (Indic_Syllabic_Category
 * Invisible_Stacker, Unicode IndicSyllabicCategory.txt): shown only before a letter.
 */
const INVISIBLE_STACKER =
  /^[\u1039\u17d2\u1a60\u1bab\uaaf6\u{10a3f}\u{11133}\u{1193e}\u{11a47}\u{11a99}\u{11d45}\u{11d97}\u{11f42}]$/u;

const before = (text: string, offset: number) => [...text.slice(Math.max(0, offset - 2), offset)].pop() ?? '';
const after = (text: string, offset: number, c: string) =>
  [...text.slice(offset + c.length, offset + c.length + 2)][0] ?? '';

/**
 * ZWNJ and ZWJ shape Persian, Arabic and Indic names and are shown as they are between two such
 * letters; anywhere else (`al\u200cice`) they only hide, and are escaped.
 */
const joinerBetweenLetters = (text: string, offset: number, c: string) =>
  SCRIPT_LETTER.test(before(text, offset)) && SCRIPT_LETTER.test(after(text, offset, c));

/**
 * A combining mark is shown when it sits, possibly after other marks, on a letter outside ASCII
 * (`क्ष`, `ü` decomposed in an older row excepted); at the start, after a space or on an ASCII
 * letter it is escaped. The offsets of the marks shown are found in one forward pass: a run of
 * marks is judged once, by the character before its first mark, not again for every mark in it.
 */
function marksOnBase(text: string): Set<number> {
  const shown = new Set<number>();
  let previous = '';
  let runOnBase = false;
  let offset = 0;
  for (const c of text) {
    if (MARK.test(c)) {
      if (!MARK.test(previous)) runOnBase = BASE.test(previous);
      if (runOnBase) shown.add(offset);
    }
    previous = c;
    offset += c.length;
  }
  return shown;
}

/** An invisible stacker on a letter is still escaped with no letter after it (`alice\u1039`). */
const markShown = (text: string, offset: number, c: string, onBase: (offset: number) => boolean) =>
  onBase(offset) && (!INVISIBLE_STACKER.test(c) || SCRIPT_LETTER.test(after(text, offset, c)));

function shownRaw(c: string, offset: number, text: string, onBase: (offset: number) => boolean): boolean {
  if (c === '\u200c' || c === '\u200d') return joinerBetweenLetters(text, offset, c);
  if (ALWAYS.test(c) || !MARK.test(c)) return false;
  return markShown(text, offset, c, onBase);
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
  // Computed at the first mark only: most text has none.
  let marks: Set<number> | undefined;
  const onBase = (offset: number) => (marks ??= marksOnBase(text)).has(offset);
  return text.replace(options.keepNewlines ? UNSAFE_BUT_NEWLINE : UNSAFE, (c, offset: number) =>
    shownRaw(c, offset, text, onBase) ? c : escape(c),
  );
}
