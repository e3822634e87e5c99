import type { z } from 'zod';
import { AppError } from '../errors/app-error.js';

/** Parses input with a zod schema; the first issue becomes COULD_NOT_VALIDATE naming its field. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.length > 0 ? issue.path.join('.') : 'body';
  throw new AppError('COULD_NOT_VALIDATE', { cause: { field, reason: issue.message } });
}
