import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { TestResponse } from '../helpers/https-client.js';

// ajv-formats is CommonJS: under ESM the default import is `module.exports`, the plugin its `default`.
const addFormats = addFormatsModule.default;

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** An operation of a document: `GET /identities/{id}`, its path as the document writes it. */
export interface DocumentedOperation {
  key: string;
  method: string;
  path: string;
  operation: any;
}

export function operationsOf(doc: any): DocumentedOperation[] {
  return Object.entries(doc.paths as Record<string, any>).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((k) => HTTP_METHODS.includes(k))
      .map((m) => ({ key: `${m.toUpperCase()} ${path}`, method: m.toUpperCase(), path, operation: item[m] })),
  );
}

export function resolve(doc: any, ref: string): any {
  return ref
    .replace(/^#\//, '')
    .split('/')
    .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((node, key) => node?.[key], doc);
}

const pointer = (...keys: string[]) => keys.map((k) => k.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/**
 * Validates real responses against an OpenAPI 3.1 document with Ajv (draft 2020-12, formats
 * checked), and records which status of which operation has been seen, so a test can demand that
 * every operation was exercised.
 */
export function createResponseValidator(doc: any) {
  const id = `urn:svc-openapi:${doc.servers[0].url}`;
  // OpenAPI words (example, discriminator …) are not JSON Schema keywords: not strict.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: id, paths: doc.paths, components: doc.components }, undefined, undefined, false);
  const compiled = new Map<string, ValidateFunction>();
  const seen = new Map<string, Set<number>>();

  function responseOf(method: string, path: string, status: number): { at: string; response: any } {
    const op = doc.paths[path]?.[method.toLowerCase()];
    if (!op) throw new Error(`${method} ${path} is not documented`);
    const documented = op.responses[String(status)];
    if (!documented) return { at: '', response: undefined };
    if (documented.$ref) return { at: documented.$ref.slice(1), response: resolve(doc, documented.$ref) };
    return {
      at: `/${pointer('paths', path, method.toLowerCase(), 'responses', String(status))}`,
      response: documented,
    };
  }

  /**
   * The problems of `res` as an answer of `method path`; none when the document describes it.
   * `bodyOnly`: the status and the JSON body, not the headers and media type.
   */
  function problems(method: string, path: string, res: TestResponse, { bodyOnly = false } = {}): string[] {
    const { at, response } = responseOf(method, path, res.status);
    if (!response) return [`status ${res.status} is not documented: ${res.text.slice(0, 300)}`];
    const found: string[] = [];
    const media = Object.keys(response.content ?? {});
    const type = bodyOnly ? 'application/json' : (res.header('content-type') ?? '').split(';')[0]!.trim();
    if (!bodyOnly) {
      for (const [name, header] of Object.entries<any>(response.headers ?? {})) {
        const declared = header.$ref ? resolve(doc, header.$ref) : header;
        if (declared.required && res.header(name) === undefined) found.push(`header ${name} is missing`);
      }
      if (media.length > 0 && !media.includes(type))
        found.push(`content-type ${type} is not one of ${media}`);
    }
    const schema = response.content?.[type]?.schema;
    if (schema && type === 'application/json') {
      const where = `${at}/${pointer('content', type, 'schema')}`;
      let validate = compiled.get(where);
      if (!validate) {
        validate = ajv.compile({ $ref: `${id}#${where}` });
        compiled.set(where, validate);
      }
      if (!validate(res.body)) {
        found.push(
          ...(validate.errors ?? []).map(
            (e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`,
          ),
        );
      }
    }
    return found;
  }

  return {
    problems,
    /** Records the answer and returns its problems, keyed for a readable failure. */
    check(method: string, path: string, res: TestResponse): Record<string, string[]> {
      const key = `${method} ${path} → ${res.status}`;
      const found = problems(method, path, res);
      if (found.length === 0) {
        const statuses = seen.get(`${method} ${path}`) ?? new Set<number>();
        statuses.add(res.status);
        seen.set(`${method} ${path}`, statuses);
      }
      return { [key]: found };
    },
    /** Operations whose documented success, or every documented error, no valid answer exercised. */
    unexercised(): string[] {
      return operationsOf(doc).flatMap(({ key, operation }) => {
        const statuses = [...(seen.get(key) ?? [])];
        const documented = Object.keys(operation.responses).map(Number);
        const success = documented.filter((s) => s < 400);
        const missing: string[] = [];
        for (const s of success) if (!statuses.includes(s)) missing.push(`${key}: success ${s}`);
        if (!statuses.some((s) => s >= 400)) missing.push(`${key}: any error`);
        return missing;
      });
    },
  };
}

export type ResponseValidator = ReturnType<typeof createResponseValidator>;

const shared = new WeakMap<object, ResponseValidator>();

/** One validator per document object, so its schemas are compiled once. */
export function validatorFor(doc: any): ResponseValidator {
  let validator = shared.get(doc);
  if (!validator) {
    validator = createResponseValidator(doc);
    shared.set(doc, validator);
  }
  return validator;
}
