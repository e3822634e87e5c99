import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';

/**
 * The `:id` path parameter (or another one, by `name`). Ids are short text; anything PostgreSQL
 * could not compare (NUL) or no id could be (too long) names no resource, so it is a 404 rather
 * than a database error.
 */
export function pathId(ctx: Context, name = 'id'): string {
  const id = (ctx.params as Record<string, unknown>)[name];
  if (typeof id !== 'string' || id.length === 0 || id.length > 255 || id.includes('\0')) {
    throw new AppError('NOT_FOUND');
  }
  return id;
}
