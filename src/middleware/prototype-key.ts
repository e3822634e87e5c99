import { isForbiddenInLine } from '../schemas/safe-text.js';
import type { InputProblem } from './check-input.js';

// qs, which parses form bodies, drops a key naming a property of Object.prototype
// (`__proto__[isAdmin]=true`, `constructor[prototype][x]=1`, and with co-body's `allowDots` also
// `__proto__.isAdmin=true`) without a word; JSON keeps such a member, and the strict body schemas
// refuse it. Refusing it here makes both answer alike.
const PROTOTYPE_NAMES = new Set(Object.getOwnPropertyNames(Object.prototype));
/** What separates the segments of a form key for qs: brackets, and dots (`allowDots`). */
const SEPARATORS = /[.[\]]/;

/** The first key of the form body `raw` with a segment qs would silently drop, or undefined. */
export function prototypeKey(raw: string): InputProblem | undefined {
  for (const key of new URLSearchParams(raw).keys()) {
    const segments = key.split(SEPARATORS);
    const bad = segments.find((s) => PROTOTYPE_NAMES.has(s));
    if (bad === undefined) continue;
    const root = segments[0]!;
    const field = isForbiddenInLine(root) ? undefined : root;
    return { field, reason: `must not use the member name ${JSON.stringify(bad)}` };
  }
  return undefined;
}
