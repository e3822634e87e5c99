import { isForbiddenInLine } from '../schemas/safe-text.js';
import type { InputProblem } from './check-input.js';

// qs, which parses form bodies, drops a key naming a property of Object.prototype
// (`__proto__[isAdmin]=true`, `constructor[prototype][x]=1`) without a word; JSON keeps such a
// member, and the strict body schemas refuse it. Refusing it here makes both answer alike.
const PROTOTYPE_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));
const BRACKETED = /\[([^[\]]*)\]/g;

/** The first key of the form body `raw` with a segment qs would silently drop, or undefined. */
export function prototypeKey(raw: string): InputProblem | undefined {
  for (const key of new URLSearchParams(raw).keys()) {
    const open = key.indexOf('[');
    const root = open > 0 ? key.slice(0, open) : key;
    const segments = [root, ...Array.from(key.slice(Math.max(open, 0)).matchAll(BRACKETED), (m) => m[1]!)];
    const bad = segments.find((s) => PROTOTYPE_NAMES.has(s));
    const field = isForbiddenInLine(root) ? undefined : root;
    if (bad !== undefined) return { field, reason: `must not use the member name ${JSON.stringify(bad)}` };
  }
  return undefined;
}
