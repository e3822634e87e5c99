import { errorCatalog, type ErrorCode } from '../errors/error-catalog.js';
import {
  authenticated,
  componentSchemas,
  headers,
  listParameters,
  parameters,
  securitySchemes,
} from './components.js';
import type { JsonSchema } from './json-schema.js';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Who may call: anyone, any authenticated caller, or admins only. */
export type Access = 'anonymous' | 'authenticated' | 'admin';

const JSON_AND_FORM = ['application/json', 'application/x-www-form-urlencoded'];

/** One route as the router registers it, with what the document says about it. */
export interface RouteDoc {
  method: HttpMethod;
  /** The router's own path (`/identities/:id`), so the two compare without translation. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  /** The body the route reads; JSON and form unless `media` says otherwise. */
  body?: { schema: JsonSchema; required?: boolean; media?: string[] };
  /** The route runs the body parser without reading a body: 413 and 415 are still possible. */
  parsesBody?: boolean;
  /** A paged list: the limit/offset/sort/filter query and its validation errors. */
  list?: boolean;
  parameters?: JsonSchema[];
  response: { status: number; description: string; schema?: JsonSchema; media?: string };
  /** Errors of the route itself; those of authentication, parsing and paths are added here. */
  errors?: ErrorCode[];
  /** Under the per-address login limiter. */
  rateLimited?: boolean;
}

const pathParams = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);

/** Koa's `/identities/:id` in OpenAPI's `/identities/{id}` form. */
export const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

function errorCodes(route: RouteDoc): ErrorCode[] {
  const codes = new Set<ErrorCode>(route.errors);
  if (route.access !== 'anonymous') codes.add('UNAUTHORIZED');
  if (route.access === 'admin') codes.add('FORBIDDEN');
  if (route.body || route.parsesBody) {
    for (const code of ['COULD_NOT_VALIDATE', 'REQUEST_ENTITY_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'] as const)
      codes.add(code);
  }
  // Every query string is checked for control characters, and lists parse filters.
  codes.add('COULD_NOT_VALIDATE');
  if (pathParams(route.path).length > 0) codes.add('NOT_FOUND');
  if (route.rateLimited) codes.add('RATE_LIMITED');
  codes.add('SERVER_ERROR');
  return [...codes];
}

/** WWW-Authenticate where only some of the codes of a status challenge. */
const optionalChallenge: JsonSchema = {
  description: 'With UNAUTHORIZED, and with INVALID_AUTH of an external JWT: one challenge per header.',
  schema: { type: 'string' },
};

/**
 * One response per status, naming its codes and narrowing the envelope's `code` to them. Each
 * distinct set is a shared component named by its codes (e.g. `COULD_NOT_VALIDATE.MFA_INVALID_TOKEN`)
 * in `shared`, so fifty operations answering UNAUTHORIZED do not repeat it fifty times.
 */
function errorResponses(codes: ErrorCode[], shared: Record<string, JsonSchema>): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  // Catalog order, so that one set of codes always gets one name.
  for (const code of (Object.keys(errorCatalog) as ErrorCode[]).filter((c) => codes.includes(c))) {
    const status = errorCatalog[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, JsonSchema> = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    const extraHeaders =
      // Session and token refusals challenge (RFC 7235 §4.1); a refused credential at login
      // (INVALID_AUTH) challenges only when there is a scheme to name, so beside it the header
      // is optional.
      status === 401 && group.includes('UNAUTHORIZED')
        ? {
            'WWW-Authenticate':
              group.length === 1 ? { $ref: '#/components/headers/WWW-Authenticate' } : optionalChallenge,
          }
        : status === 429
          ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } }
          : undefined;
    const name = group.join('.');
    responses[String(status)] = { $ref: `#/components/responses/${name}` };
    shared[name] ??= {
      description: group.map((code) => `${code}: ${errorCatalog[code].message}`).join('; '),
      ...(extraHeaders ? { headers: extraHeaders } : {}),
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/ErrorEnvelope' },
              { properties: { error: { properties: { code: { enum: group } } } } },
            ],
          },
        },
      },
    };
  }
  return responses;
}

/** Every authenticated response says when the session expires, so clients can renew in time. */
const expiryHeaders = {
  'expiration-seconds': { $ref: '#/components/headers/expiration-seconds' },
  'expires-at': { $ref: '#/components/headers/expires-at' },
};

function operation(route: RouteDoc, sharedResponses: Record<string, JsonSchema>): JsonSchema {
  const { response, body } = route;
  const params = [...(route.list ? listParameters : []), ...(route.parameters ?? [])];
  const success: JsonSchema = {
    description: response.description,
    ...(route.access !== 'anonymous' ? { headers: expiryHeaders } : {}),
    content: {
      [response.media ?? 'application/json']: response.schema ? { schema: response.schema } : {},
    },
  };
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    security: route.access === 'anonymous' ? [] : authenticated,
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(body
      ? {
          requestBody: {
            required: body.required ?? true,
            content: Object.fromEntries(
              (body.media ?? JSON_AND_FORM).map((m) => [m, { schema: body.schema }]),
            ),
          },
        }
      : {}),
    responses: {
      [String(response.status)]: success,
      ...errorResponses(errorCodes(route), sharedResponses),
    },
  };
}

const pathParam = (name: string) => ({ name, in: 'path', required: true, schema: { type: 'string' } });

function pathsOf(
  routes: RouteDoc[],
  sharedResponses: Record<string, JsonSchema>,
): Record<string, Record<string, unknown>> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const names = pathParams(route.path);
    const item = (paths[openApiPath(route.path)] ??=
      names.length > 0
        ? {
            parameters: names.map((n) =>
              n === 'id' ? { $ref: '#/components/parameters/id' } : pathParam(n),
            ),
          }
        : {});
    if (item[route.method]) throw new Error(`openapi: ${route.method} ${route.path} is described twice`);
    item[route.method] = operation(route, sharedResponses);
  }
  return paths;
}

/** `#/components/<kind>/<name>` referenced anywhere under `value`. */
function collectRefs(value: unknown, found: Set<string>): void {
  if (Array.isArray(value)) for (const v of value) collectRefs(v, found);
  else if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref' && typeof v === 'string') found.add(v);
      else collectRefs(v, found);
    }
  }
}

/** Keeps the components the operations reach, so each API's document shows only its own shapes. */
function reachableComponents(
  paths: unknown,
  responses: Record<string, JsonSchema>,
): Record<string, Record<string, unknown>> {
  const all: Record<string, Record<string, unknown>> = {
    schemas: componentSchemas,
    responses,
    parameters,
    headers,
  };
  const reached = new Set<string>();
  const pending = new Set<string>();
  collectRefs(paths, pending);
  for (const ref of pending) {
    if (reached.has(ref)) continue;
    const [, , kind = '', name = ''] = ref.split('/');
    const target = all[kind]?.[name];
    if (target === undefined) throw new Error(`openapi: dangling reference ${ref}`);
    reached.add(ref);
    collectRefs(target, pending);
  }
  // Declaration order, not discovery order: the document reads like components.ts.
  const kept = Object.fromEntries(
    Object.entries(all).map(([kind, members]) => [
      kind,
      Object.fromEntries(
        Object.entries(members).filter(([name]) => reached.has(`#/components/${kind}/${name}`)),
      ),
    ]),
  );
  return { ...kept, securitySchemes };
}

export interface DocumentInfo {
  title: string;
  description: string;
  /** The router's prefix, e.g. `/edge/client/v1`: the document's server. */
  basePath: string;
}

/** An OpenAPI 3.1 document of `routes`; built once at start (spec-routes.ts). */
export function buildDocument(info: DocumentInfo, routes: RouteDoc[]): JsonSchema {
  const responses: Record<string, JsonSchema> = {};
  const paths = pathsOf(routes, responses);
  return {
    openapi: '3.1.1',
    info: { title: info.title, version: '1', description: info.description },
    servers: [{ url: info.basePath }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: reachableComponents(paths, responses),
  };
}
