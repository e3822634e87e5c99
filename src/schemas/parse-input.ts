import type { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import { isForbiddenInLine } from './safe-text.js';

/** Member names echoed in a field error: short, and nothing a terminal or a table would act on. */
const MAX_ECHOED_NAME = 64;
const echoable = (key: string) => key.length <= MAX_ECHOED_NAME && !isForbiddenInLine(key);

/** The field an issue names: its path, and for an unknown member the member itself. */
function fieldOf(issue: z.core.$ZodIssue): { field: string; reason: string } {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    // A misspelt member is an error, never silently dropped (docs/operations.md, "Hostile input").
    if (echoable(key)) return { field: [...path, key].join('.'), reason: 'is not a member of this body' };
    return { field: path.length > 0 ? path.join('.') : 'body', reason: 'has a member that is not allowed' };
  }
  return { field: path.length > 0 ? path.join('.') : 'body', reason: issue.message };
}

/**
 * Parses input with a zod schema; an issue becomes COULD_NOT_VALIDATE naming its field. An unknown
 * member goes first: a misspelt `nmae` explains the missing `name` that follows from it.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const { issues } = result.error;
  const issue = issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0]!;
  throw new AppError('COULD_NOT_VALIDATE', { cause: fieldOf(issue) });
}
