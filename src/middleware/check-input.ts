import type { Context, Next } from 'koa';
import { validationError } from '../errors/app-error.js';
import { CONTROL_REASON, isForbidden } from '../schemas/safe-text.js';

/** Deepest nesting of objects and arrays a request body may have; the top level is 1. */
export const MAX_NESTING = 32;

export interface InputProblem {
  /** The top-level member holding the bad value, or undefined when that cannot be named. */
  field?: string;
  reason: string;
}

/**
 * One linear walk over a parsed body or query: strings and member names free of control
 * characters, objects and arrays at most MAX_NESTING deep. Iterative, so hostile nesting
 * cannot exhaust the stack (JSON.parse itself does not recurse in V8).
 */
export function checkInput(input: unknown): InputProblem | undefined {
  const stack: { value: unknown; depth: number; field?: string }[] = [{ value: input, depth: 0 }];
  while (stack.length > 0) {
    const { value, depth, field } = stack.pop()!;
    if (typeof value === 'string') {
      if (isForbidden(value)) return { field, reason: CONTROL_REASON };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth + 1 > MAX_NESTING) return { reason: `nested more than ${MAX_NESTING} levels deep` };
    for (const [key, member] of Object.entries(value)) {
      // Member names are echoed only at the top level, and only when they are clean.
      const named = depth === 0 ? key : field;
      if (isForbidden(key)) return { field: depth === 0 ? undefined : field, reason: CONTROL_REASON };
      stack.push({ value: member, depth: depth + 1, field: named });
    }
  }
  return undefined;
}

/** Query strings of our Edge and login routes: 400 COULD_NOT_VALIDATE naming the parameter. */
export async function checkQuery(ctx: Context, next: Next) {
  const problem = checkInput(ctx.query);
  if (problem) throw validationError(problem.field ?? 'query', problem.reason);
  return next();
}
