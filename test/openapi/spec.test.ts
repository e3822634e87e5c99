import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import SwaggerParser from '@apidevtools/swagger-parser';
import type Router from '@koa/router';
import type { TestResponse } from '../helpers/https-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { resolve, validatorFor } from './response-validator.js';

const APIS = [
  { api: 'client', prefix: '/edge/client/v1' },
  { api: 'management', prefix: '/edge/management/v1' },
] as const;

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** `GET /edge/client/v1/enroll/ott`-style keys of every operation a document describes. */
function documentedOperations(doc: any): string[] {
  const base = doc.servers[0].url as string;
  return Object.entries(doc.paths as Record<string, any>).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((k) => HTTP_METHODS.includes(k))
      .map((method) => `${method.toUpperCase()} ${base}${path.replace(/\{(\w+)\}/g, ':$1')}`),
  );
}

/** The same keys from the router's own stack: middleware layers (no methods) and HEAD left out. */
function routerOperations(router: Router): string[] {
  return router.stack.flatMap((layer) =>
    layer.methods.filter((m) => m !== 'HEAD').map((method) => `${method} ${layer.path}`),
  );
}

function operationOf(doc: any, method: string, path: string): any {
  const op = doc.paths[path]?.[method.toLowerCase()];
  if (!op) throw new Error(`${method} ${path} is not documented`);
  return op;
}

/** The real response is one the document names, with its documented body (Ajv) and headers. */
function expectDocumented(doc: any, method: string, path: string, res: TestResponse): void {
  operationOf(doc, method, path);
  const key = `${method} ${path}`;
  expect({ [key]: validatorFor(doc).problems(method, path, res) }).toEqual({ [key]: [] });
}

describe('OpenAPI documents of the Edge APIs', () => {
  let server: TestServer;
  const docs: Record<string, any> = {};
  beforeAll(async () => {
    server = await startTestServer();
    for (const { api, prefix } of APIS) docs[api] = (await server.client.get(`${prefix}/spec`)).body;
  });
  afterAll(() => server.close());

  test('both documents are served anonymously as JSON, without a challenge', async () => {
    for (const { prefix } of APIS) {
      const res = await server.client.get(`${prefix}/spec`);
      expect(res.status).toBe(200);
      expect(res.header('content-type')).toMatch(/^application\/json/);
      expect(res.header('www-authenticate')).toBeUndefined();
      expect(res.body.openapi).toMatch(/^3\.1\.\d+$/);
      expect(res.body.servers).toEqual([{ url: prefix }]);
    }
  });

  test('both documents are valid OpenAPI 3.1, with every path parameter declared', async () => {
    for (const { api } of APIS) {
      const doc = docs[api];
      await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeDefined();
      const operationIds = new Set<string>();
      for (const [path, item] of Object.entries(doc.paths as Record<string, any>)) {
        const declared = (item.parameters ?? []).map((p: any) => (p.$ref ? resolve(doc, p.$ref) : p));
        const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
        expect(declared.filter((p: any) => p.in === 'path').map((p: any) => p.name)).toEqual(inPath);
        for (const method of Object.keys(item).filter((k) => HTTP_METHODS.includes(k))) {
          expect(operationIds.has(item[method].operationId)).toBe(false);
          operationIds.add(item[method].operationId);
        }
      }
    }
  });

  test('every route the routers mount is documented, and every documented operation is a route', () => {
    const routers = server.app.services.routers!;
    for (const { api } of APIS) {
      const mounted = routerOperations(routers[api]).sort();
      expect(mounted.length).toBeGreaterThan(10);
      expect(documentedOperations(docs[api]).sort()).toEqual(mounted);
    }
  });

  test('every documented operation answers on the server: secured ones 401, anonymous ones unchallenged', async () => {
    for (const { api } of APIS) {
      const doc = docs[api];
      for (const [path, item] of Object.entries(doc.paths as Record<string, any>)) {
        for (const method of Object.keys(item).filter((k) => HTTP_METHODS.includes(k))) {
          const url = doc.servers[0].url + path.replace(/\{\w+\}/g, 'openapi-probe');
          const res = await server.client.request(method.toUpperCase(), url);
          const anonymous = item[method].security.length === 0;
          const seen = {
            op: `${method} ${path}`,
            routed: ![404, 405].includes(res.status),
            // A credential check of the request itself (auto CA enrollment's TLS client certificate)
            // is the operation's own answer, INVALID_AUTH; it is not the authentication stage.
            refused:
              [401, 403].includes(res.status) && !(anonymous && res.body?.error?.code === 'INVALID_AUTH'),
            challenged: res.headerAll('www-authenticate').length > 0,
          };
          // Unauthenticated, a secured operation stops at authentication; an anonymous one never does.
          expect(seen).toEqual({ ...seen, routed: true, refused: !anonymous, challenged: !anonymous });
          expectDocumented(doc, method, path, res);
        }
      }
    }
  });

  test('anonymous operations are exactly login (with its passkey options), enrollment, the public signer list and the document', () => {
    const anonymous = (doc: any) =>
      documentedOperations(doc).filter((key) => {
        const [method, full] = key.split(' ') as [string, string];
        const path = full.slice(doc.servers[0].url.length).replace(/:(\w+)/g, '{$1}');
        return operationOf(doc, method, path).security.length === 0;
      });
    expect(anonymous(docs.client).sort()).toEqual(
      [
        'POST /edge/client/v1/authenticate',
        'POST /edge/client/v1/authenticate/passkey/options',
        'POST /edge/client/v1/enroll',
        'POST /edge/client/v1/enroll/ca',
        'POST /edge/client/v1/enroll/ott',
        'POST /edge/client/v1/enroll/ottca',
        'POST /edge/client/v1/enroll/updb',
        'GET /edge/client/v1/external-jwt-signers',
        'GET /edge/client/v1/spec',
      ].sort(),
    );
    expect(anonymous(docs.management).sort()).toEqual(
      [
        'POST /edge/management/v1/authenticate',
        'POST /edge/management/v1/authenticate/passkey/options',
        'GET /edge/management/v1/spec',
      ].sort(),
    );
    const schemes = docs.management.components.securitySchemes;
    expect(schemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(schemes.svcSession).toMatchObject({ type: 'apiKey', in: 'header', name: 'svc-session' });
  });

  test('request bodies are the zod schemas, and lists take limit, offset, sort and filter', () => {
    const schemas = docs.management.components.schemas;
    expect(schemas.IdentityCreate.required).toEqual(['name', 'isAdmin']);
    expect(schemas.EnrollmentCreate.properties.method.enum).toEqual(['ott', 'ottca', 'updb']);
    const create = operationOf(docs.management, 'POST', '/identities');
    expect(Object.keys(create.requestBody.content)).toEqual([
      'application/json',
      'application/x-www-form-urlencoded',
    ]);
    const verify = operationOf(docs.management, 'POST', '/cas/{id}/verify');
    expect(Object.keys(verify.requestBody.content)).toEqual(['text/plain', 'application/x-pem-file']);
    const list = operationOf(docs.management, 'GET', '/identities');
    expect(list.parameters.map((p: any) => resolve(docs.management, p.$ref).name)).toEqual([
      'limit',
      'offset',
      'sort',
      'filter',
    ]);
  });

  test('real responses of the management API have the documented shapes', async () => {
    const doc = docs.management;
    const session = { 'svc-session': await server.adminToken() };
    const call = async (method: string, path: string, body?: unknown) => {
      const url = `/edge/management/v1${path}`;
      return server.client.request(method, url, { headers: session, ...(body ? { body } : {}) });
    };
    const login = await server.client.post('/edge/management/v1/authenticate?method=password', {
      body: { username: 'admin', password: 'admin-password-1' },
    });
    expectDocumented(doc, 'POST', '/authenticate', login);

    const created = await call('POST', '/identities', {
      name: 'openapi-user',
      isAdmin: false,
      enrollment: { updb: 'oa' },
    });
    expectDocumented(doc, 'POST', '/identities', created);
    const id = created.body.data.id as string;
    expectDocumented(doc, 'GET', '/identities/{id}', await call('GET', `/identities/${id}`));
    expectDocumented(
      doc,
      'PATCH',
      '/identities/{id}',
      await call('PATCH', `/identities/${id}`, { tags: { a: 1 } }),
    );
    expectDocumented(doc, 'POST', '/identities', await call('POST', '/identities', { isAdmin: 'maybe' }));
    expectDocumented(doc, 'GET', '/identities/{id}', await call('GET', '/identities/no-such-identity'));
    for (const path of [
      '/identities',
      '/enrollments',
      '/authenticators',
      '/auth-policies',
      '/external-jwt-signers',
      '/cas',
      '/keys',
    ]) {
      expectDocumented(doc, 'GET', path, await call('GET', path));
    }
    expectDocumented(doc, 'GET', '/identities', await call('GET', '/identities?limit=0'));
    expectDocumented(doc, 'GET', '/auth-policies/{id}', await call('GET', '/auth-policies/default'));
    expectDocumented(doc, 'GET', '/current-identity', await call('GET', '/current-identity'));
  });

  test('real responses of the client API have the documented shapes', async () => {
    const doc = docs.client;
    const headers = { 'svc-session': await server.adminToken() };
    const get = (path: string) => server.client.get(`/edge/client/v1${path}`, { headers });
    for (const path of [
      '/current-api-session',
      '/current-identity',
      '/external-jwt-signers',
      '/current-identity/mfa',
    ]) {
      expectDocumented(doc, 'GET', path, await get(path));
    }
    const enroll = await server.client.post('/edge/client/v1/enroll/ott', {
      body: { token: 'nope', clientCsr: 'x' },
    });
    expectDocumented(doc, 'POST', '/enroll/ott', enroll);
  });
});
