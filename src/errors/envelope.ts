import type { Context } from 'koa';
import type { AppError } from './app-error.js';
import { formatChallenge } from './www-authenticate.js';

/** `{"data": …, "meta": {}}`. */
export function sendData(
  ctx: Context,
  data: unknown,
  status = 200,
  meta: Record<string, unknown> = {},
): void {
  ctx.status = status;
  ctx.body = { data, meta };
}

/** 201 with the id and the self link of the created resource. */
export function sendCreated(ctx: Context, collection: string, id: string): void {
  sendData(ctx, { id, _links: { self: { href: `./${collection}/${id}` } } }, 201);
}

export function sendEmpty(ctx: Context): void {
  sendData(ctx, {});
}

export function sendList(
  ctx: Context,
  items: unknown[],
  pagination: { limit: number; offset: number; totalCount: number },
): void {
  sendData(ctx, items, 200, { pagination });
}

/** The one writer of the Edge error envelope, its challenges and headers. */
export function sendError(ctx: Context, err: AppError, requestId: string): void {
  ctx.status = err.status;
  for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
  if (err.challenges.length > 0) ctx.set('WWW-Authenticate', err.challenges.map(formatChallenge));
  ctx.body = {
    error: {
      code: err.code,
      message: err.message,
      ...(err.clientCause ? { cause: err.clientCause } : {}),
      requestId,
    },
    meta: { apiVersion: '1' },
  };
}
