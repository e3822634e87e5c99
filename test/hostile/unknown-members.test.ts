import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  createIdentity,
  identityDetail,
  managementApi,
  MGMT,
  type ManagementApi,
} from '../identities/identity-fixtures.js';

const BODY_METHODS = ['post', 'put', 'patch'];
const UNKNOWN = 'zzUnknownMember';
/** Login and second-factor bodies stay open: OpenZiti SDKs add members such as envInfo and sdkInfo. */
const OPEN = new Set(['LoginBody', 'MfaCode', 'MfaStep', 'OptionalMfaCode']);

/** Every management operation whose documented JSON body is a component, with a path to call. */
function bodyOperations(doc: any): { method: string; path: string; component: string }[] {
  return Object.entries(doc.paths as Record<string, any>).flatMap(([path, item]) =>
    BODY_METHODS.flatMap((method) => {
      const ref = item[method]?.requestBody?.content?.['application/json']?.schema?.$ref as
        string | undefined;
      if (!ref) return [];
      const component = ref.split('/').pop()!;
      return [{ method, path: path.replace(/\{\w+\}/g, 'no-such-id'), component }];
    }),
  );
}

describe('management bodies refuse members they do not know, at every level', () => {
  let server: TestServer;
  let api: ManagementApi;
  let doc: any;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    doc = (await server.client.get(`${MGMT}/spec`)).body;
  });
  afterAll(() => server.close());

  const expectNamed = (res: { status: number; body: any }, field: string) => {
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } });
  };

  test('every create, replace and patch body is documented as closed and refuses an unknown top-level member', async () => {
    const operations = bodyOperations(doc).filter((o) => !OPEN.has(o.component));
    expect(operations.map((o) => o.component).sort()).toEqual(
      expect.arrayContaining([
        'AuthPolicyCreate',
        'AuthPolicyPatch',
        'CaCreate',
        'CaPatch',
        'CaReplace',
        'EnrollmentCreate',
        'EnrollmentRefresh',
        'ExternalJwtSignerCreate',
        'ExternalJwtSignerPatch',
        'IdentityCreate',
        'IdentityDisable',
        'IdentityPatch',
        'IdentityReplace',
      ]),
    );
    for (const { method, path, component } of operations) {
      expect({
        component,
        additionalProperties: doc.components.schemas[component].additionalProperties,
      }).toEqual({
        component,
        additionalProperties: false,
      });
      const res = await api[method as 'post' | 'put' | 'patch'](path, { body: { [UNKNOWN]: 1 } });
      expect({ op: `${method} ${path}`, status: res.status, field: res.body.error?.cause?.field }).toEqual({
        op: `${method} ${path}`,
        status: 400,
        field: UNKNOWN,
      });
    }
  });

  test('a misspelt top-level member of an auth policy is refused, not dropped', async () => {
    const res = await api.post('/auth-policies', {
      body: { name: 'typo-top', secundary: { requireTotp: true } },
    });
    expectNamed(res, 'secundary');
    expect((await api.get('/auth-policies?filter=name="typo-top"')).body.data).toHaveLength(0);
  });

  test.each([
    ['/auth-policies', { name: 'n1', primary: { cert: { allowed: true, x: 1 } } }, 'primary.cert.x'],
    ['/auth-policies', { name: 'n2', primary: { updb: { allowed: true, x: 1 } } }, 'primary.updb.x'],
    ['/auth-policies', { name: 'n3', primary: { extJwt: { x: 1 } } }, 'primary.extJwt.x'],
    ['/auth-policies', { name: 'n4', primary: { x: {} } }, 'primary.x'],
    ['/auth-policies', { name: 'n5', secondary: { requireTotp: false, x: 1 } }, 'secondary.x'],
    ['/identities', { name: 'n6', isAdmin: false, enrollment: { ott: true, x: 1 } }, 'enrollment.x'],
  ])('POST %s with a nested unknown member %j is 400 naming %s', async (path, body, field) => {
    expectNamed(await api.post(path, { body }), field);
  });

  test('nested unknown members are refused on PUT and PATCH too', async () => {
    const created = await api.post('/auth-policies', { body: { name: 'nested-updates' } });
    const id = created.body.data.id as string;
    const body = { name: 'nested-updates', primary: { updb: { maxAttempt: 3 } } };
    expectNamed(await api.put(`/auth-policies/${id}`, { body }), 'primary.updb.maxAttempt');
    expectNamed(await api.patch(`/auth-policies/${id}`, { body }), 'primary.updb.maxAttempt');
  });

  test('the OpenZiti members documented as ignored are accepted and not kept', async () => {
    const ignored = {
      defaultHostingPrecedence: 'default',
      defaultHostingCost: 0,
      serviceHostingPrecedences: {},
      serviceHostingCosts: {},
      appData: { a: 'b' },
    };
    const id = await createIdentity(api, { name: 'hosting', isAdmin: false, ...ignored });
    expect(
      (await api.put(`/identities/${id}`, { body: { name: 'hosting', isAdmin: false, ...ignored } })).status,
    ).toBe(200);
    expect((await api.patch(`/identities/${id}`, { body: { appData: null } })).status).toBe(200);
    const detail = await identityDetail(api, id);
    expect(detail).not.toHaveProperty('appData');
    expect(detail).not.toHaveProperty('defaultHostingCost');

    const policy = await api.post('/auth-policies', { body: { name: 'tagged', tags: { team: 'x' } } });
    expect(policy.status).toBe(201);
    const policyId = policy.body.data.id as string;
    expect((await api.patch(`/auth-policies/${policyId}`, { body: { tags: {} } })).status).toBe(200);
    const signer = await api.post('/external-jwt-signers', {
      body: {
        name: 'tagged',
        issuer: 'https://tagged.example',
        audience: 'svc',
        jwksEndpoint: 'https://tagged.example/jwks',
        tags: { team: 'x' },
      },
    });
    expect(signer.status).toBe(201);

    for (const component of ['IdentityCreate', 'AuthPolicyCreate', 'ExternalJwtSignerCreate', 'CaCreate']) {
      expect(doc.components.schemas[component].description).toMatch(/ignored: `/);
    }
  });

  describe('members a parser would drop or overwrite without a word', () => {
    const form = (path: string, method: 'post' | 'patch', raw: string) =>
      server.client[method](`${MGMT}${path}`, {
        headers: { 'svc-session': adminToken, 'content-type': 'application/x-www-form-urlencoded' },
        body: raw,
      });
    let adminToken: string;
    beforeAll(async () => {
      adminToken = await server.adminToken();
    });

    test.each([
      ['__proto__[isAdmin]=true', '__proto__'],
      ['constructor[prototype][isAdmin]=true', 'constructor'],
      ['hasOwnProperty=x', 'hasOwnProperty'],
      ['roleAttributes[__proto__]=x', 'roleAttributes'],
      // qs reads dots as brackets too (co-body turns on allowDots).
      ['__proto__.isAdmin=true', '__proto__'],
      ['tags.toString=1', 'tags'],
    ])('a form body key %j is 400 naming %s, as the same member in JSON is', async (key, field) => {
      const id = await createIdentity(api, { name: `form-${field}-${key.length}`, isAdmin: false });
      const res = await form(`/identities/${id}`, 'patch', `${key}&externalId=x`);
      expectNamed(res, field);
      expect(res.body.error.cause.reason).toContain('must not use the member name');
      expect(await identityDetail(api, id)).toMatchObject({ isAdmin: false, externalId: null });
      expectNamed(await form('/identities', 'post', `name=form-${key.length}&isAdmin=false&${key}`), field);
    });

    test('a plain form body is still accepted', async () => {
      const id = await createIdentity(api, { name: 'form-plain', isAdmin: false });
      expect((await form(`/identities/${id}`, 'patch', 'externalId=ext-form')).status).toBe(200);
      expect((await identityDetail(api, id)).externalId).toBe('ext-form');
    });

    test('a JSON member given twice is 400 naming it; the value is not changed', async () => {
      const id = await createIdentity(api, { name: 'dup-json', isAdmin: false });
      const raw = (body: string) =>
        api.patch(`/identities/${id}`, { headers: { 'content-type': 'application/json' }, body });
      const twice = await raw('{"isAdmin":false,"isAdmin":true}');
      expectNamed(twice, 'isAdmin');
      expect(twice.body.error.cause.reason).toBe('is given more than once');
      // The same name spelt with an escape is the same member.
      expectNamed(await raw('{"isAdmin":false,"is\\u0041dmin":true}'), 'isAdmin');
      const nested = await api.post('/auth-policies', {
        headers: { 'content-type': 'application/json' },
        body: '{"name":"dup-nested","primary":{"updb":{"allowed":false,"allowed":true}}}',
      });
      expectNamed(nested, 'primary');
      expect(nested.body.error.cause.reason).toContain('"allowed" more than once');
      expect((await identityDetail(api, id)).isAdmin).toBe(false);
      // The same name in two different objects, and inside string values, is not a duplicate.
      const fine = await api.post('/auth-policies', {
        headers: { 'content-type': 'application/json' },
        body: '{"name":"dup-\\"name\\":{","primary":{"updb":{"allowed":true},"cert":{"allowed":true}}}',
      });
      expect(fine.status).toBe(201);
    });
  });
});
