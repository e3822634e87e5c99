import type { InputProblem } from './check-input.js';

interface Frame {
  /** Member names seen so far; undefined for an array. */
  names?: Set<string>;
  expectName: boolean;
}

/** The end (exclusive) of the JSON string token that opens at `start`. */
function stringEnd(raw: string, start: number): number {
  let i = start + 1;
  while (i < raw.length && raw[i] !== '"') i += raw[i] === '\\' ? 2 : 1;
  return i + 1;
}

/**
 * The first member name given twice in one object of `raw`, a text JSON.parse accepted. JSON.parse
 * keeps the last value without a word (RFC 8259 §4 leaves duplicate names to the parser), so
 * `{"isAdmin":false,"isAdmin":true}` would pass a check that read the first one. One linear scan,
 * no recursion; names are compared after their escapes are decoded (`"is\u0041dmin"`).
 */
export function duplicateMember(raw: string): InputProblem | undefined {
  const stack: Frame[] = [];
  let topName: string | undefined;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    const frame = stack.at(-1);
    if (c === '{' || c === '[')
      stack.push({ names: c === '{' ? new Set() : undefined, expectName: c === '{' });
    else if (c === '}' || c === ']') stack.pop();
    else if (c === ',' && frame?.names) frame.expectName = true;
    else if (c === '"') {
      const end = stringEnd(raw, i);
      if (frame?.names && frame.expectName) {
        const name = JSON.parse(raw.slice(i, end)) as string;
        if (stack.length === 1) topName = name;
        if (frame.names.has(name)) {
          return stack.length === 1
            ? { field: name, reason: 'is given more than once' }
            : { field: topName, reason: `holds the member ${JSON.stringify(name)} more than once` };
        }
        frame.names.add(name);
        frame.expectName = false;
      }
      i = end - 1;
    }
  }
  return undefined;
}
