import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  createIdentity,
  enrolledUpdbUser,
  managementApi,
  type ManagementApi,
} from '../identities/identity-fixtures.js';

const FRESH_DEFAULTS = {
  primary: {
    cert: { allowed: true, allowExpiredCerts: false, bindTokens: true },
    updb: {
      allowed: true,
      minPasswordLength: 8,
      requireSpecialChar: false,
      requireNumberChar: false,
      requireMixedCase: false,
      maxAttempts: 0,
      lockoutDurationMinutes: 0,
    },
    extJwt: { allowed: false, allowedSigners: [] },
    passkey: { allowed: true },
  },
  secondary: { requireTotp: false, requireExtJwt: null, requirePasskey: false },
  sessions: { max: 0, onLimit: 'evictOldest' },
};

describe('auth policies', () => {
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  async function createPolicy(body: Record<string, unknown>): Promise<string> {
    const res = await api.post('/auth-policies', { body });
    if (res.status !== 201) throw new Error(`policy create failed: ${res.status} ${res.text}`);
    return res.body.data.id as string;
  }

  async function createSigner(name: string): Promise<string> {
    const res = await api.post('/external-jwt-signers', {
      body: {
        name,
        issuer: `https://${name}.example`,
        audience: 'svc',
        jwksEndpoint: `https://${name}.example/jwks`,
      },
    });
    if (res.status !== 201) throw new Error(`signer create failed: ${res.status} ${res.text}`);
    return res.body.data.id as string;
  }

  const policy = async (id: string) => (await api.get(`/auth-policies/${id}`)).body.data;

  test('the default policy exists with its documented values', async () => {
    const res = await api.get('/auth-policies/default');

    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: 'default', ...FRESH_DEFAULTS });
  });

  test('a policy created with only a name takes the fresh default values, not the edited default policy', async () => {
    expect(
      (await api.patch('/auth-policies/default', { body: { primary: { updb: { maxAttempts: 7 } } } })).status,
    ).toBe(200);
    try {
      const res = await api.post('/auth-policies', { body: { name: 'only-a-name' } });

      expect(res.status).toBe(201);
      expect(res.body.data._links.self.href).toBe(`./auth-policies/${res.body.data.id}`);
      expect(await policy(res.body.data.id)).toMatchObject({ name: 'only-a-name', ...FRESH_DEFAULTS });
    } finally {
      await api.patch('/auth-policies/default', { body: { primary: { updb: { maxAttempts: 0 } } } });
    }
  });

  test('members given on create replace the defaults one by one', async () => {
    const id = await createPolicy({
      name: 'partial',
      primary: { cert: { allowed: false }, updb: { minPasswordLength: 12, requireMixedCase: true } },
      secondary: { requireTotp: true },
    });

    const detail = await policy(id);
    expect(detail.primary.cert).toEqual({ allowed: false, allowExpiredCerts: false, bindTokens: true });
    expect(detail.primary.updb).toEqual({
      ...FRESH_DEFAULTS.primary.updb,
      minPasswordLength: 12,
      requireMixedCase: true,
    });
    expect(detail.secondary).toEqual({ requireTotp: true, requireExtJwt: null, requirePasskey: false });
  });

  test('requireExtJwtSigner is accepted as an alias and shown as requireExtJwt', async () => {
    const signerId = await createSigner('alias-signer');

    const id = await createPolicy({ name: 'alias', secondary: { requireExtJwtSigner: signerId } });

    const detail = await policy(id);
    expect(detail.secondary).toEqual({ requireTotp: false, requireExtJwt: signerId, requirePasskey: false });
    expect(detail.secondary).not.toHaveProperty('requireExtJwtSigner');
  });

  test('requireExtJwt and a different requireExtJwtSigner are refused naming the field', async () => {
    const a = await createSigner('alias-a');
    const b = await createSigner('alias-b');

    const res = await api.post('/auth-policies', {
      body: { name: 'two-names', secondary: { requireExtJwt: a, requireExtJwtSigner: b } },
    });

    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'secondary.requireExtJwt' },
    });
  });

  test('an unknown signer id is 404, in allowedSigners and in requireExtJwt, and nothing is written', async () => {
    const known = await createSigner('known-signer');

    const inAllowed = await api.post('/auth-policies', {
      body: {
        name: 'bad-allowed',
        primary: { extJwt: { allowed: true, allowedSigners: [known, 'no-such'] } },
      },
    });
    const inSecondary = await api.post('/auth-policies', {
      body: { name: 'bad-secondary', secondary: { requireExtJwt: 'no-such' } },
    });
    const onPatch = await api.patch('/auth-policies/default', {
      body: { secondary: { requireExtJwt: 'no-such' } },
    });

    expect(inAllowed.status).toBe(404);
    expect(inAllowed.body.error.cause).toMatchObject({ field: 'primary.extJwt.allowedSigners' });
    expect(inSecondary.status).toBe(404);
    expect(inSecondary.body.error.cause).toMatchObject({ field: 'secondary.requireExtJwt' });
    expect(onPatch.status).toBe(404);
    const names = (await api.get('/auth-policies?limit=500')).body.data.map((p: { name: string }) => p.name);
    expect(names).not.toContain('bad-allowed');
    expect(names).not.toContain('bad-secondary');
    expect((await policy('default')).secondary.requireExtJwt).toBeNull();
  });

  test('the default policy cannot be deleted but can be updated', async () => {
    const del = await api.delete('/auth-policies/default');
    const patch = await api.patch('/auth-policies/default', { body: { name: 'Default (edited)' } });

    expect(del.status).toBe(409);
    expect(del.body.error.code).toBe('CONFLICT');
    expect(patch.status).toBe(200);
    expect((await policy('default')).name).toBe('Default (edited)');
    await api.patch('/auth-policies/default', { body: { name: 'Default' } });
  });

  test('a policy in use by an identity cannot be deleted; once unused it can', async () => {
    const id = await createPolicy({ name: 'in-use' });
    const identityId = await createIdentity(api, { name: 'policy-user', isAdmin: false, authPolicyId: id });

    const refused = await api.delete(`/auth-policies/${id}`);
    await api.patch(`/identities/${identityId}`, { body: { authPolicyId: 'default' } });
    const deleted = await api.delete(`/auth-policies/${id}`);

    expect(refused.status).toBe(409);
    expect(deleted.status).toBe(200);
    expect((await api.get(`/auth-policies/${id}`)).status).toBe(404);
  });

  test('PUT replaces the policy: omitted members go back to the fresh defaults', async () => {
    const id = await createPolicy({ name: 'to-replace', primary: { cert: { allowed: false } } });

    const res = await api.put(`/auth-policies/${id}`, {
      body: { name: 'replaced', secondary: { requireTotp: true } },
    });

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: {}, meta: {} });
    expect(await policy(id)).toMatchObject({
      name: 'replaced',
      primary: FRESH_DEFAULTS.primary,
      secondary: { requireTotp: true, requireExtJwt: null },
    });
  });

  test('PATCH changes only the members given', async () => {
    const signerId = await createSigner('patch-signer');
    const id = await createPolicy({ name: 'to-patch', primary: { cert: { allowExpiredCerts: true } } });

    const res = await api.patch(`/auth-policies/${id}`, {
      body: { primary: { extJwt: { allowed: true, allowedSigners: [signerId] } } },
    });

    expect(res.status).toBe(200);
    const detail = await policy(id);
    expect(detail.primary.cert).toEqual({ allowed: true, allowExpiredCerts: true, bindTokens: true });
    expect(detail.primary.extJwt).toEqual({ allowed: true, allowedSigners: [signerId] });
  });

  test.each([
    [{}, 'name'],
    [{ name: '   ' }, 'name'],
    [{ name: 'x', primary: { updb: { maxAttempts: -1 } } }, 'primary.updb.maxAttempts'],
    [{ name: 'x', primary: { updb: { minPasswordLength: 0 } } }, 'primary.updb.minPasswordLength'],
    [
      { name: 'x', primary: { updb: { lockoutDurationMinutes: 1e12 } } },
      'primary.updb.lockoutDurationMinutes',
    ],
    [{ name: 'x', primary: { cert: { allowed: 'maybe' } } }, 'primary.cert.allowed'],
    [{ name: 'x', primary: { extJwt: { allowedSigners: 'abc' } } }, 'primary.extJwt.allowedSigners'],
  ])('a bad create body %j is refused naming %s', async (body, field) => {
    const res = await api.post('/auth-policies', { body });

    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } });
  });

  test('a misspelt member is refused rather than ignored', async () => {
    const res = await api.post('/auth-policies', {
      body: { name: 'typo', primary: { updb: { maxAttempt: 3 } } },
    });

    expect(res.status).toBe(400);
    expect(res.body.error.cause.field).toBe('primary.updb.maxAttempt');
  });

  test('a second policy with the same name is 409 naming the field', async () => {
    await createPolicy({ name: 'twice' });

    const res = await api.post('/auth-policies', { body: { name: 'twice' } });

    expect(res.status).toBe(409);
    expect(res.body.error.cause).toMatchObject({ field: 'name' });
  });

  test('a form-encoded body is understood like JSON', async () => {
    const res = await api.post('/auth-policies', {
      form: { name: 'from-a-form', 'primary[updb][maxAttempts]': '4', 'primary[cert][allowed]': 'false' },
    });

    expect(res.status).toBe(201);
    const detail = await policy(res.body.data.id);
    expect(detail.primary.updb.maxAttempts).toBe(4);
    expect(detail.primary.cert.allowed).toBe(false);
  });

  test('the list filters, sorts and paginates', async () => {
    await createPolicy({ name: 'list-b' });
    await createPolicy({ name: 'list-a' });
    await createPolicy({ name: 'list-c' });

    const res = await api.get(
      `/auth-policies?filter=${encodeURIComponent('name contains "list-"')}&sort=name desc&limit=2`,
    );

    expect(res.status).toBe(200);
    expect(res.body.data.map((p: { name: string }) => p.name)).toEqual(['list-c', 'list-b']);
    expect(res.body.meta.pagination).toEqual({ limit: 2, offset: 0, totalCount: 3 });
  });

  test('unknown ids are 404 on detail, PUT, PATCH and DELETE', async () => {
    const statuses = [
      (await api.get('/auth-policies/nope')).status,
      (await api.put('/auth-policies/nope', { body: { name: 'n' } })).status,
      (await api.patch('/auth-policies/nope', { body: {} })).status,
      (await api.delete('/auth-policies/nope')).status,
    ];

    expect(statuses).toEqual([404, 404, 404, 404]);
  });

  test("changing a policy's secondary block ends the sessions of its identities; other changes do not", async () => {
    const id = await createPolicy({ name: 'session-policy' });
    const user = await enrolledUpdbUser(server, api, 'secondary-user', { authPolicyId: id });
    const other = await enrolledUpdbUser(server, api, 'bystander-user');
    const current = (token: string) =>
      server.client.get('/edge/client/v1/current-api-session', { headers: { 'svc-session': token } });

    await api.patch(`/auth-policies/${id}`, { body: { primary: { updb: { minPasswordLength: 9 } } } });
    const afterPrimaryChange = await current(user.token);
    await api.patch(`/auth-policies/${id}`, { body: { secondary: { requireTotp: true } } });
    const afterSecondaryChange = await current(user.token);

    expect(afterPrimaryChange.status).toBe(200);
    expect(afterSecondaryChange.status).toBe(401);
    expect((await current(other.token)).status).toBe(200);
    const revoked = await server.app.knex('revocations').where({ kind: 'identity', subject: user.id });
    expect(revoked.length).toBeGreaterThan(0);
  });

  test('a non-admin gets 403', async () => {
    const user = await enrolledUpdbUser(server, api, 'plain-user');

    const res = await server.client.get('/edge/management/v1/auth-policies', {
      headers: { 'svc-session': user.token },
    });

    expect(res.status).toBe(403);
  });
});
