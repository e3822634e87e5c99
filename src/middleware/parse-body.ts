import type { Context, Next } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { AppError, validationError } from '../errors/app-error.js';
import { checkInput, type InputProblem } from './check-input.js';
import { duplicateMember } from './duplicate-member.js';
import { prototypeKey } from './prototype-key.js';

export const MAX_BODY_BYTES = 1024 * 1024;
const LIMIT = '1mb';

function hasBody(ctx: Context): boolean {
  const length = ctx.get('content-length');
  return (length !== '' && length !== '0') || ctx.get('transfer-encoding') !== '';
}

/**
 * JSON or form bodies only (415 otherwise), at most 1 MiB (413), on DELETE too
 * (docs/operations.md). koa-body's own limits (56 KB form default) are raised to match. Every
 * parsed body passes `checkInput` here, once, so no route sees control characters or hostile
 * nesting (400 COULD_NOT_VALIDATE).
 */
export function parseBody(extraTypes: string[] = []) {
  const parser = koaBody({
    json: true,
    urlencoded: true,
    text: extraTypes.length > 0,
    multipart: false,
    jsonLimit: LIMIT,
    formLimit: LIMIT,
    textLimit: LIMIT,
    jsonStrict: true,
    // The raw text, for the checks JSON.parse and qs cannot make (rawBodyProblem); dropped after.
    includeUnparsed: true,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
    onError: (err) => {
      throw toBodyError(err as Error & { status?: number; type?: string });
    },
  });
  return async function parseBodyMiddleware(ctx: Context, next: Next) {
    if (Number(ctx.get('content-length') || 0) > MAX_BODY_BYTES)
      throw new AppError('REQUEST_ENTITY_TOO_LARGE');
    if (hasBody(ctx)) {
      if (!ctx.is('application/json', 'application/x-www-form-urlencoded', ...extraTypes)) {
        throw new AppError('UNSUPPORTED_MEDIA_TYPE', {
          message: `the content type ${JSON.stringify(ctx.get('content-type'))} is not supported (supported: application/json, application/x-www-form-urlencoded${extraTypes.map((t) => ', ' + t).join('')})`,
        });
      }
      if (ctx.is(...extraTypes) && extraTypes.length > 0) {
        // koa-body parses text/* only; other textual types (application/x-pem-file) are read raw.
        ctx.request.body = await readText(ctx);
        refuseBadInput(ctx.request.body);
        return next();
      }
    }
    await parser(ctx, async () => undefined);
    if (ctx.request.body === undefined) ctx.request.body = {};
    // The raw body is taken off the request before anything can refuse it.
    const rawProblem = rawBodyProblem(ctx);
    refuseBadInput(ctx.request.body);
    refuseProblem(rawProblem);
    return next();
  };
}

function refuseBadInput(body: unknown): void {
  refuseProblem(checkInput(body));
}

function refuseProblem(problem: InputProblem | undefined): void {
  if (problem) throw validationError(problem.field ?? 'body', problem.reason);
}

/**
 * A member name given twice in a JSON body, or a form key naming a property of Object.prototype:
 * both parsers keep one reading without a word (the last value; nothing), so they are refused
 * like an unknown member. The raw text, which may hold a password, is not kept on the request.
 */
function rawBodyProblem(ctx: Context): InputProblem | undefined {
  const request = ctx.request as { rawBody?: unknown };
  const raw = request.rawBody;
  delete request.rawBody;
  if (typeof raw !== 'string' || raw === '') return undefined;
  if (ctx.is('application/json')) return duplicateMember(raw);
  if (ctx.is('application/x-www-form-urlencoded')) return prototypeKey(raw);
  return undefined;
}

function toBodyError(err: Error & { status?: number; type?: string }): AppError {
  if (err.status === 413 || err.type === 'entity.too.large') return new AppError('REQUEST_ENTITY_TOO_LARGE');
  if (err.status === 415) return new AppError('UNSUPPORTED_MEDIA_TYPE');
  return new AppError('COULD_NOT_VALIDATE', {
    cause: { field: 'body', reason: 'the request body could not be parsed' },
    // Only the error's kind: parser messages quote the body, which may hold a password.
    detail: err.name,
  });
}

async function readText(ctx: Context): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new AppError('REQUEST_ENTITY_TOO_LARGE');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The parsed body as a plain record; a JSON array or scalar is a validation error. */
export function bodyOf(ctx: Context): Record<string, unknown> {
  const body = ctx.request.body as unknown;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new AppError('COULD_NOT_VALIDATE', { cause: { field: 'body', reason: 'must be a JSON object' } });
  }
  return body as Record<string, unknown>;
}
