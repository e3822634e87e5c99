/** PostgreSQL error fields we map to API errors (bad input is a 4xx, never a 5xx). */
export interface PgError {
  code?: string;
  constraint?: string;
  detail?: string;
}

export const isUniqueViolation = (err: unknown, constraint?: string): boolean =>
  (err as PgError)?.code === '23505' &&
  (constraint === undefined || (err as PgError).constraint === constraint);

export const isForeignKeyViolation = (err: unknown, constraint?: string): boolean =>
  (err as PgError)?.code === '23503' &&
  (constraint === undefined || (err as PgError).constraint === constraint);
