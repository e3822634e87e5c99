const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
/** JSON whitespace (RFC 8259, section 2): space, tab, line feed, carriage return. */
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/**
 * The number of elements of the array that `text` holds at its top level, counted without building
 * any of them: JSON.parse turns each element into an object far larger than its few bytes of text,
 * so a caller refusing too many elements must count them first. Counting stops at `stopAfter` + 1.
 * Text that is not a JSON array counts 0; text that is not valid JSON is counted as far as it goes
 * and left for JSON.parse to refuse.
 */
export function countJsonArrayItems(text: string, stopAfter = Infinity): number {
  let depth = 0;
  let topIsArray = false;
  let expectItem = false;
  let items = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (depth === 1 && topIsArray && expectItem && !isSpace(c) && c !== CLOSE_ARRAY) {
      expectItem = false;
      if (++items > stopAfter) return items;
    }
    if (c === QUOTE) {
      // Skip the string: a backslash escapes the character after it, a quote ends it.
      for (i++; i < text.length && text.charCodeAt(i) !== QUOTE; i++) {
        if (text.charCodeAt(i) === BACKSLASH) i++;
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (depth === 0) topIsArray = c === OPEN_ARRAY;
      if (++depth === 1) expectItem = true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    } else if (c === COMMA && depth === 1) {
      expectItem = true;
    }
  }
  return items;
}
