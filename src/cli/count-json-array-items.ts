const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
/** JSON whitespace (RFC 8259, section 2): space, tab, line feed, carriage return. */
const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** What a JSON array of rows may hold; a limit left out is no limit. */
export interface JsonArrayLimits {
  /** Most elements of the top-level array. */
  items?: number;
  /** Most values below the top level, at any depth: array elements and object member values. */
  values?: number;
  /** Deepest nesting of arrays and objects; the top-level array is 1, an object in it 2. */
  depth?: number;
  /** The only keys an object may have. */
  keys?: ReadonlySet<string>;
}

/**
 * The text goes over a limit: `limit` names which (`object`: an object anywhere but as an element
 * of the top-level array), `item` is the element of the top-level array it is in (1 = the first, 0
 * = not in one), `key` the key that is not allowed.
 */
export class JsonLimitError extends Error {
  constructor(
    readonly limit: 'items' | 'values' | 'depth' | 'object' | 'key',
    readonly item: number,
    message: string,
    readonly key?: string,
  ) {
    super(item > 0 ? `item ${item}: ${message}` : message);
  }
}

/**
 * The number of elements of the array that `text` holds at its top level, counted without building
 * any of them, and the check that the array is one of rows within `limits`: JSON.parse turns each
 * value into an object far larger than its few bytes of text, and an object with keys of its own
 * into a hidden class of its own, so a caller refusing too much must look before it parses.
 *
 * Objects are allowed only as elements of the top-level array (the rows); JsonLimitError reports the
 * first place that goes over a limit. Text that is not a JSON array counts 0; text that is not valid
 * JSON is checked as far as it goes and left for JSON.parse to refuse: JSON.parse stops at its first
 * error, and the text before it was read here as JSON.parse reads it.
 */
export function countJsonArrayItems(text: string, limits: JsonArrayLimits = {}): number {
  const { items: maxItems = Infinity, values: maxValues = Infinity, depth: maxDepth = Infinity } = limits;
  // One entry per open array (true) or object (false), outermost first.
  const open: boolean[] = [];
  let expectValue = false; // after `[`, `:`, or `,` in an array
  let expectKey = false; // after `{`, or `,` in an object
  let items = 0;
  let values = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) continue;
    const depth = open.length;
    const inRows = depth === 1 && open[0] === true;
    const isValue = expectValue && c !== CLOSE_ARRAY;
    const isKey = expectKey && c === QUOTE;
    expectValue = false;
    expectKey = false;
    if (isValue) {
      if (inRows && ++items > maxItems) throw new JsonLimitError('items', 0, `more than ${maxItems} items`);
      if (++values > maxValues) throw new JsonLimitError('values', items, `more than ${maxValues} values`);
    }
    if (c === QUOTE) {
      // Skip the string: a backslash escapes the character after it, a quote ends it.
      const start = i + 1;
      for (i++; i < text.length && text.charCodeAt(i) !== QUOTE; i++) {
        if (text.charCodeAt(i) === BACKSLASH) i++;
      }
      if (isKey && limits.keys) {
        const key = keyOf(text.slice(start, i));
        if (key === undefined) break;
        if (!limits.keys.has(key)) throw new JsonLimitError('key', items, `key ${key} is not allowed`, key);
      }
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (depth >= maxDepth) {
        throw new JsonLimitError('depth', items, `arrays and objects nested more than ${maxDepth} deep`);
      }
      if (c === OPEN_OBJECT && !inRows) {
        throw new JsonLimitError('object', items, 'an object that is not an element of the top-level array');
      }
      open.push(c === OPEN_ARRAY);
      expectValue = c === OPEN_ARRAY;
      expectKey = c === OPEN_OBJECT;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      open.pop();
    } else if (c === COMMA) {
      expectValue = open[depth - 1] === true;
      expectKey = open[depth - 1] === false;
    } else if (c === COLON) {
      expectValue = true;
    }
  }
  return items;
}

/** The key a JSON string's text (between its quotes) stands for; undefined: not valid JSON. */
function keyOf(raw: string): string | undefined {
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return undefined;
  }
}
