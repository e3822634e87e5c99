import { errorCatalog, type ErrorCode } from './error-catalog.js';
import type { Challenge } from './www-authenticate.js';

export interface AppErrorOptions {
  message?: string;
  /** Client-visible detail, e.g. `{ field, reason }` for COULD_NOT_VALIDATE. */
  cause?: Record<string, unknown>;
  /** One WWW-Authenticate header per challenge. */
  challenges?: Challenge[];
  /** Extra response headers, e.g. Retry-After. */
  headers?: Record<string, string>;
  /** Logged, never sent. */
  detail?: unknown;
}

/** The one error type of the service; its code picks status and message from the catalog. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly clientCause?: Record<string, unknown>;
  readonly challenges: Challenge[];
  readonly headers: Record<string, string>;
  readonly detail?: unknown;

  constructor(code: ErrorCode, options: AppErrorOptions = {}) {
    super(options.message ?? errorCatalog[code].message);
    this.name = 'AppError';
    this.code = code;
    this.status = errorCatalog[code].status;
    this.clientCause = options.cause;
    this.challenges = options.challenges ?? [];
    this.headers = options.headers ?? {};
    this.detail = options.detail;
  }
}

/** A COULD_NOT_VALIDATE error naming the offending field. */
export function validationError(field: string, reason: string): AppError {
  return new AppError('COULD_NOT_VALIDATE', { cause: { field, reason } });
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
