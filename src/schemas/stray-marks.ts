import { isVirama } from './precis-context.js';

const MARK = /^\p{M}$/u;
const ASCII_LETTER = /^[A-Za-z]$/u;
const JOINERS = new Set(['\u200c', '\u200d']);
/**
 * Indic_Syllabic_Category Invisible_Stacker (Unicode IndicSyllabicCategory.txt): viramas that
 * show nothing themselves and only stack the next consonant under this one; with no consonant
 * after them they add nothing visible.
 */
const INVISIBLE_STACKER =
  /[\u1039\u17d2\u1a60\u1bab\uaaf6\u{10a3f}\u{11133}\u{1193e}\u{11a47}\u{11a99}\u{11d45}\u{11d97}\u{11f42}]$/u;

/**
 * Why `text` holds a mark that combines with nothing, or undefined: a combining mark at the start
 * (RFC 5891 §5.4 refuses one at the start of a label); a virama on an ASCII letter (Latin has no
 * inherent vowel to kill, so it only adds a stray mark, or for U+1039 nothing visible); an
 * invisible stacker at the end; a joiner at the end (RFC 5892 A.1 and A.2 allow a joiner after
 * any virama, but at the end there is nothing for it to join).
 */
export function strayMarkProblem(text: string): string | undefined {
  const chars = [...text];
  if (MARK.test(chars[0] ?? '')) return 'must not begin with a combining mark';
  if (JOINERS.has(chars.at(-1) ?? '')) return 'must not end with a zero-width joiner or non-joiner';
  if (INVISIBLE_STACKER.test(chars.at(-1) ?? '')) return 'must not end with an invisible stacker (virama)';
  for (let i = 1; i < chars.length; i++) {
    if (isVirama(chars[i]!.codePointAt(0)) && ASCII_LETTER.test(chars[i - 1]!))
      return 'must not put a virama on a Latin letter';
  }
  return undefined;
}
