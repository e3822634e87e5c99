import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
import { generateRootCa } from '../../src/crypto/pki.js';
import { expectError } from '../helpers/expect-error.js';
import { ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  createIdentity,
  enrolledUpdbUser,
  identityDetail,
  managementApi,
  type ManagementApi,
} from './identity-fixtures.js';

describe('identities of the management API', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  test('creating an identity with every field answers 201 with the create envelope and the detail shows them', async () => {
    const res = await api.post('/identities', {
      body: {
        name: 'full-identity',
        type: 'dEvIcE',
        isAdmin: false,
        enrollment: { ott: true },
        externalId: 'ext-full',
        authPolicyId: 'default',
        roleAttributes: ['red', 'blue', 'red'],
        tags: { owner: 'ops', level: 3 },
      },
    });

    expect(res.status).toBe(201);
    const id = res.body.data.id;
    expect(res.body).toEqual({ data: { id, _links: { self: { href: `./identities/${id}` } } }, meta: {} });
    const detail = await identityDetail(api, id);
    expect(detail).toMatchObject({
      id,
      name: 'full-identity',
      type: 'Device',
      isAdmin: false,
      isDefaultAdmin: false,
      externalId: 'ext-full',
      authPolicyId: 'default',
      roleAttributes: ['blue', 'red'],
      tags: { owner: 'ops', level: 3 },
      disabled: false,
      disabledUntil: null,
      isMfaEnabled: false,
      hasApiSession: false,
      authenticators: {},
    });
    expect(Object.keys(detail.enrollment)).toEqual(['ott']);
    expect(detail.enrollment.ott).toMatchObject({ id: expect.any(String), token: expect.any(String) });
    expect(detail.enrollment.ott.jwt.split('.')).toHaveLength(3);
    expect(new Date(detail.enrollment.ott.expiresAt).getTime()).toBeGreaterThan(Date.now());
    expect(typeof detail.createdAt).toBe('string');
    expect(typeof detail.updatedAt).toBe('string');
  });

  test('type defaults to Default and optional fields take their defaults', async () => {
    const id = await createIdentity(api, { name: 'minimal-identity', isAdmin: false });

    const detail = await identityDetail(api, id);
    expect(detail).toMatchObject({
      type: 'Default',
      externalId: null,
      authPolicyId: 'default',
      roleAttributes: [],
      tags: {},
      enrollment: {},
      authenticators: {},
    });
  });

  test.each([
    ['name is missing', { isAdmin: false }, 'name'],
    ['name is blank', { name: '   ', isAdmin: false }, 'name'],
    ['name is not a string', { name: 42, isAdmin: false }, 'name'],
    ['name holds a NUL character', { name: 'a\u0000b', isAdmin: false }, 'name'],
    ['isAdmin is missing', { name: 'v-1' }, 'isAdmin'],
    ['isAdmin is not a boolean', { name: 'v-2', isAdmin: 'yes' }, 'isAdmin'],
    ['type is unknown', { name: 'v-3', isAdmin: false, type: 'Robot' }, 'type'],
    [
      'enrollment has two members',
      { name: 'v-4', isAdmin: false, enrollment: { ott: true, updb: 'u' } },
      'enrollment',
    ],
    [
      'enrollment is ott: false alone',
      { name: 'v-5', isAdmin: false, enrollment: { ott: false } },
      'enrollment',
    ],
    [
      'enrollment has an unknown member',
      { name: 'v-6', isAdmin: false, enrollment: { otp: true } },
      'enrollment.otp',
    ],
    [
      'enrollment.updb is empty',
      { name: 'v-7', isAdmin: false, enrollment: { updb: '' } },
      'enrollment.updb',
    ],
    [
      'enrollment.ottca is not a string',
      { name: 'v-8', isAdmin: false, enrollment: { ottca: 7 } },
      'enrollment.ottca',
    ],
    ['externalId is not a string', { name: 'v-9', isAdmin: false, externalId: 5 }, 'externalId'],
    [
      'roleAttributes is not an array',
      { name: 'v-10', isAdmin: false, roleAttributes: 'red' },
      'roleAttributes',
    ],
    [
      'a role attribute is not a string',
      { name: 'v-11', isAdmin: false, roleAttributes: ['ok', 1] },
      'roleAttributes.1',
    ],
    ['tags is an array', { name: 'v-12', isAdmin: false, tags: ['x'] }, 'tags'],
    ['tags hold a NUL character', { name: 'v-13', isAdmin: false, tags: { k: 'a\u0000' } }, 'tags'],
    ['authPolicyId is empty', { name: 'v-14', isAdmin: false, authPolicyId: '' }, 'authPolicyId'],
  ])('a create where %s is 400 COULD_NOT_VALIDATE naming the field', async (_case, body, field) => {
    const res = await api.post('/identities', { body });

    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('COULD_NOT_VALIDATE');
    expect(res.body.error.cause.field).toBe(field);
    expect(typeof res.body.error.cause.reason).toBe('string');
  });

  test('a body that is a JSON array is 400 on field body', async () => {
    const res = await api.post('/identities', { body: [] });

    expect(res.status).toBe(400);
    expect(res.body.error.cause.field).toBe('body');
  });

  test('a form-encoded create works like JSON', async () => {
    const res = await api.post('/identities', {
      form: { name: 'form-identity', isAdmin: 'false', type: 'service', 'roleAttributes[]': ['a', 'b'] },
    });

    expect(res.status).toBe(201);
    expect(await identityDetail(api, res.body.data.id)).toMatchObject({
      name: 'form-identity',
      type: 'Service',
      isAdmin: false,
      roleAttributes: ['a', 'b'],
    });
  });

  test('an unknown authPolicyId is 404 and an unknown ottca CA is 404', async () => {
    const policy = await api.post('/identities', {
      body: { name: 'bad-policy', isAdmin: false, authPolicyId: 'no-such-policy' },
    });
    const ca = await api.post('/identities', {
      body: { name: 'bad-ca', isAdmin: false, enrollment: { ottca: 'no-such-ca' } },
    });

    expect(policy.status).toBe(404);
    expect(policy.body.error).toMatchObject({ code: 'NOT_FOUND', cause: { field: 'authPolicyId' } });
    expect(ca.status).toBe(404);
    expect(ca.body.error).toMatchObject({ code: 'NOT_FOUND', cause: { field: 'enrollment.ottca' } });
    const names = (await api.get('/identities?filter=name contains "bad-"')).body.data;
    expect(names).toEqual([]);
  });

  test('duplicate name, externalId and UPDB username are 409 CONFLICT naming the field', async () => {
    await createIdentity(api, {
      name: 'dup-a',
      isAdmin: false,
      externalId: 'ext-dup',
      enrollment: { updb: 'dup-user' },
    });

    const name = await api.post('/identities', { body: { name: 'dup-a', isAdmin: false } });
    const externalId = await api.post('/identities', {
      body: { name: 'dup-b', isAdmin: false, externalId: 'ext-dup' },
    });
    const pendingUsername = await api.post('/identities', {
      body: { name: 'dup-c', isAdmin: false, enrollment: { updb: 'dup-user' } },
    });
    const takenUsername = await api.post('/identities', {
      body: { name: 'dup-d', isAdmin: false, enrollment: { updb: ADMIN_USERNAME } },
    });

    expect(name.status).toBe(409);
    expect(name.body.error).toMatchObject({ code: 'CONFLICT', cause: { field: 'name' } });
    expect(externalId.status).toBe(409);
    expect(externalId.body.error).toMatchObject({ code: 'CONFLICT', cause: { field: 'externalId' } });
    expect(pendingUsername.status).toBe(409);
    expect(pendingUsername.body.error).toMatchObject({
      code: 'CONFLICT',
      cause: { field: 'enrollment.updb' },
    });
    expect(takenUsername.status).toBe(409);
    expect(takenUsername.body.error.cause.field).toBe('enrollment.updb');
    // Nothing half-written: the refused identities do not exist.
    const left = (await api.get('/identities?filter=name contains "dup-"')).body.data.map((i: any) => i.name);
    expect(left).toEqual(['dup-a']);
  });

  test('parallel creates of one name give exactly one 201 and 409 for the rest', async () => {
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        api.post('/identities', { body: { name: 'race-name', isAdmin: false } }),
      ),
    );

    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
  });

  test('parallel creates reserving one UPDB username give exactly one 201', async () => {
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        api.post('/identities', {
          body: { name: `race-user-${i}`, isAdmin: false, enrollment: { updb: 'race-user' } },
        }),
      ),
    );

    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
  });

  test('an identity with no enrollment and no externalId has no authenticator and cannot log in', async () => {
    // The one credential that needs no enrollment is an external JWT (rule 3). With the signer's
    // default useExternalId, a JWT can only name an identity through its externalId, so even a
    // valid token of an allowed signer naming this identity's id and name is refused.
    const key = await generateRootCa({ commonName: 'rule-4 idp key' });
    const issuer = 'https://rule-4.idp.example';
    const signer = await api.post('/external-jwt-signers', {
      body: { name: 'rule-4-idp', issuer, audience: 'rule-4', certPem: key.certPem },
    });
    expect(signer.status).toBe(201);
    const policy = await api.post('/auth-policies', {
      body: {
        name: 'rule-4-jwt',
        primary: { extJwt: { allowed: true, allowedSigners: [signer.body.data.id] } },
      },
    });
    expect(policy.status).toBe(201);
    const authPolicyId = policy.body.data.id as string;
    const id = await createIdentity(api, { name: 'no-credential', isAdmin: false, authPolicyId });
    const withExternalId = await createIdentity(api, {
      name: 'rule-4-control',
      isAdmin: false,
      authPolicyId,
      externalId: 'rule-4-ext',
    });
    const jwt = (sub: string) =>
      new SignJWT({})
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuer(issuer)
        .setAudience('rule-4')
        .setSubject(sub)
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(createPrivateKey(key.keyPem));
    const jwtLogin = async (sub: string) =>
      server.client.post('/edge/client/v1/authenticate?method=ext-jwt', {
        headers: { authorization: `Bearer ${await jwt(sub)}` },
        body: {},
      });

    const detail = await identityDetail(api, id);
    const byId = await jwtLogin(id);
    const byName = await jwtLogin('no-credential');
    const control = await jwtLogin('rule-4-ext');

    expect(detail.authenticators).toEqual({});
    expect(detail.enrollment).toEqual({});
    const authenticators = await api.get(`/authenticators?filter=identityId = "${id}"`);
    expect(authenticators.body.meta.pagination.totalCount).toBe(0);
    const challenge =
      `Bearer realm="svc-primary-ext-jwt", error="invalid", error_description="token is invalid", ` +
      `id="${signer.body.data.id}", issuer="${issuer}"`;
    expectError(byId, { status: 401, code: 'INVALID_AUTH', challenge });
    expectError(byName, { status: 401, code: 'INVALID_AUTH', challenge });
    // Control: the same signer, policy and token shape log in an identity that has an externalId.
    expect(control.status).toBe(200);
    expect(control.body.data.identity.id).toBe(withExternalId);
  });

  test('a non-admin gets 403 FORBIDDEN on the management endpoints', async () => {
    const user = await enrolledUpdbUser(server, api, 'plain-user');
    const headers = { 'svc-session': user.token };

    const calls = await Promise.all([
      server.client.get('/edge/management/v1/identities', { headers }),
      server.client.post('/edge/management/v1/identities', { headers, body: { name: 'x', isAdmin: true } }),
      server.client.get(`/edge/management/v1/identities/${user.id}`, { headers }),
      server.client.patch(`/edge/management/v1/identities/${user.id}`, { headers, body: { isAdmin: true } }),
      server.client.delete(`/edge/management/v1/identities/${user.id}`, { headers }),
      server.client.get('/edge/management/v1/enrollments', { headers }),
      server.client.get('/edge/management/v1/authenticators', { headers }),
    ]);

    expect(calls.map((c) => c.status)).toEqual([403, 403, 403, 403, 403, 403, 403]);
    expect(calls[0]!.body.error.code).toBe('FORBIDDEN');
    expect((await identityDetail(api, user.id)).isAdmin).toBe(false);
  });

  test('management endpoints without a session are 401', async () => {
    const res = await server.client.get('/edge/management/v1/identities');

    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });
});
