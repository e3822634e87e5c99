import { DEFAULT_LIMIT, MAX_LIMIT } from '../schemas/list-query.js';
import { obj, ref, str, type JsonSchema } from './json-schema.js';
import { requestSchemas } from './request-schemas.js';
import { responseSchemas } from './response-schemas.js';

/** An OIDC access token or the legacy session token, on both Edge APIs. */
export const securitySchemes: JsonSchema = {
  bearerAuth: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: 'An access token from /oidc/token.',
  },
  svcSession: {
    type: 'apiKey',
    in: 'header',
    name: 'svc-session',
    description: 'A legacy session token from POST /authenticate.',
  },
};

/** Either credential is enough; `[]` marks an anonymous operation. */
export const authenticated = [{ bearerAuth: [] }, { svcSession: [] }];

export const headers: JsonSchema = {
  'expiration-seconds': {
    description: 'Whole seconds until the API session (or the access token) expires.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
  'expires-at': {
    description: 'When the API session (or the access token) expires, RFC 3339 UTC.',
    required: true,
    schema: { type: 'string', format: 'date-time' },
  },
  'WWW-Authenticate': {
    description:
      'One challenge per header: realms svc-session, svc-oidc, svc-primary-ext-jwt, svc-secondary-ext-jwt.',
    required: true,
    schema: str,
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    required: true,
    schema: { type: 'integer', minimum: 0 },
  },
};

/** The list query: `limit`, `offset`, `sort`, `filter`. */
export const parameters: JsonSchema = {
  limit: {
    name: 'limit',
    in: 'query',
    description: 'Page size.',
    schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
  },
  offset: {
    name: 'offset',
    in: 'query',
    description: 'Items to skip.',
    schema: { type: 'integer', minimum: 0, default: 0 },
  },
  sort: {
    name: 'sort',
    in: 'query',
    description: 'Field and direction, comma-separated for several keys.',
    schema: str,
    example: 'name desc',
  },
  filter: {
    name: 'filter',
    in: 'query',
    description:
      'Clauses `field = "v"`, `field != "v"`, `field contains "v"` with string, number, `true`/`false` or `null` literals, joined by `and`. ' +
      'Date-time fields also take `<`, `<=`, `>`, `>=` with an RFC 3339 date-time, e.g. `createdAt >= "2026-11-01T00:00:00Z"`; ' +
      'these on another field, or a value that is not an RFC 3339 date-time, are 400 naming the field.',
    schema: str,
    example: 'name contains "svc" and isAdmin = false',
  },
  id: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'The id of the resource.',
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  },
};

export const listParameters = ['limit', 'offset', 'sort', 'filter'].map((name) => ({
  $ref: `#/components/parameters/${name}`,
}));

export const componentSchemas: Record<string, JsonSchema> = {
  ...responseSchemas,
  ...requestSchemas,
};

/** `{"data": …, "meta": {}}`. */
export const dataEnvelope = (data: JsonSchema): JsonSchema =>
  obj({ data, meta: { type: 'object', additionalProperties: false } }, [], { additionalProperties: false });

/** `{"data": [...], "meta": {"pagination": …}}`. */
export const listEnvelope = (item: JsonSchema): JsonSchema =>
  obj({ data: { type: 'array', items: item }, meta: ref('ListMeta') }, [], { additionalProperties: false });
