/**
 * Characters a terminal acts on instead of showing: C0 controls, DEL, C1 (U+0080–U+009F; U+009B
 * is an 8-bit CSI) and the bidirectional formatting characters (U+061C, U+200E/F,
 * U+202A–U+202E, U+2066–U+2069), which make one name look like another.
 */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;
const UNSAFE_BUT_NEWLINE =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

const escape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` safe to write to a terminal: each character above is shown as its `\uXXXX` escape, so
 * ESC reads `\u001b` and cannot move the cursor, clear the screen or set the title. The escape is
 * JSON's own, so `--json` output stays valid JSON with the same values. With `keepNewlines`, LF
 * passes: for output whose line breaks are the CLI's own formatting (a table, pretty JSON);
 * values inside it are escaped first, so their line breaks are already shown as `\u000a`.
 */
export function terminalText(text: string, options: { keepNewlines?: boolean } = {}): string {
  return text.replace(options.keepNewlines ? UNSAFE_BUT_NEWLINE : UNSAFE, escape);
}
