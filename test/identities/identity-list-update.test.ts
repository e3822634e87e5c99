import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createIdentity, identityDetail, managementApi, type ManagementApi } from './identity-fixtures.js';

describe('listing and changing identities', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  describe('listing', () => {
    beforeAll(async () => {
      for (const [i, name] of ['list-c', 'list-a', 'list-b', 'list-e', 'list-d'].entries()) {
        await createIdentity(api, { name, isAdmin: i === 0, externalId: `list-ext-${name}` });
      }
    });

    test('a filtered list is sorted by name and paginated with the total count', async () => {
      const res = await api.get('/identities?filter=name contains "list-"&limit=2&offset=1');

      expect(res.status).toBe(200);
      expect(res.body.data.map((i: any) => i.name)).toEqual(['list-b', 'list-c']);
      expect(res.body.meta).toEqual({ pagination: { limit: 2, offset: 1, totalCount: 5 } });
      expect(res.body.data[0]).toHaveProperty('authenticators');
    });

    test('sort, equality, boolean and externalId filters apply', async () => {
      const desc = await api.get('/identities?filter=name contains "list-"&sort=name desc');
      const admins = await api.get('/identities?filter=name contains "list-" and isAdmin = true');
      const byExt = await api.get('/identities?filter=externalId = "list-ext-list-d"');
      const byName = await api.get('/identities?filter=name = "list-e"');

      expect(desc.body.data.map((i: any) => i.name)).toEqual([
        'list-e',
        'list-d',
        'list-c',
        'list-b',
        'list-a',
      ]);
      expect(admins.body.data.map((i: any) => i.name)).toEqual(['list-c']);
      expect(byExt.body.data.map((i: any) => i.name)).toEqual(['list-d']);
      expect(byName.body.data.map((i: any) => i.name)).toEqual(['list-e']);
    });

    test('the unfiltered total count follows every creation and deletion exactly', async () => {
      const total = async () => (await api.get('/identities?limit=1')).body.meta.pagination.totalCount;
      const all = async () => (await api.get('/identities?limit=500')).body.data.length;
      const before = await total();
      expect(before).toBe(await all());

      const a = await createIdentity(api, { name: 'count-a', isAdmin: false });
      await createIdentity(api, { name: 'count-b', isAdmin: false });
      expect(await total()).toBe(before + 2);
      expect((await api.delete(`/identities/${a}`)).status).toBe(200);
      expect(await total()).toBe(before + 1);
      expect(await total()).toBe(await all());
    });

    test.each([
      ['filter=bogus = "x"', 'filter'],
      ['filter=isAdmin = "yes"', 'filter'],
      ['sort=nope', 'sort'],
      ['limit=0', 'limit'],
      ['offset=-1', 'offset'],
    ])('a list with %s is 400 on that parameter', async (query, field) => {
      const res = await api.get(`/identities?${query}`);

      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } });
    });
  });

  test('PUT replaces every mutable field and leaves the enrollment alone', async () => {
    const id = await createIdentity(api, {
      name: 'put-me',
      isAdmin: false,
      type: 'User',
      externalId: 'put-ext',
      roleAttributes: ['old'],
      tags: { old: true },
      enrollment: { ott: true },
    });

    const res = await api.put(`/identities/${id}`, {
      body: { name: 'put-done', isAdmin: false, roleAttributes: ['new'] },
    });

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: {}, meta: {} });
    const detail = await identityDetail(api, id);
    expect(detail).toMatchObject({
      name: 'put-done',
      type: 'Default',
      externalId: null,
      roleAttributes: ['new'],
      tags: {},
      isDefaultAdmin: false,
    });
    expect(Object.keys(detail.enrollment)).toEqual(['ott']);
  });

  test('PUT without the required fields is 400 naming the field', async () => {
    const id = await createIdentity(api, { name: 'put-invalid', isAdmin: false });

    const res = await api.put(`/identities/${id}`, { body: { name: 'put-invalid' } });

    expect(res.status).toBe(400);
    expect(res.body.error.cause.field).toBe('isAdmin');
  });

  test('PATCH changes only the given fields; null clears externalId', async () => {
    const id = await createIdentity(api, {
      name: 'patch-me',
      isAdmin: false,
      type: 'Device',
      externalId: 'patch-ext',
      roleAttributes: ['keep'],
      tags: { keep: 1 },
    });

    const renamed = await api.patch(`/identities/${id}`, { body: { name: 'patch-done', tags: { t: 2 } } });
    const cleared = await api.patch(`/identities/${id}`, { body: { externalId: null } });

    expect(renamed.status).toBe(200);
    expect(cleared.status).toBe(200);
    expect(await identityDetail(api, id)).toMatchObject({
      name: 'patch-done',
      type: 'Device',
      externalId: null,
      roleAttributes: ['keep'],
      tags: { t: 2 },
    });
  });

  test('PATCH with a taken name is 409, an unknown policy 404, a bad type 400', async () => {
    await createIdentity(api, { name: 'patch-taken', isAdmin: false });
    const id = await createIdentity(api, { name: 'patch-other', isAdmin: false });

    const taken = await api.patch(`/identities/${id}`, { body: { name: 'patch-taken' } });
    const policy = await api.patch(`/identities/${id}`, { body: { authPolicyId: 'nope' } });
    const type = await api.patch(`/identities/${id}`, { body: { type: 'Router' } });

    expect(taken.status).toBe(409);
    expect(taken.body.error.cause.field).toBe('name');
    expect(policy.status).toBe(404);
    expect(type.status).toBe(400);
    expect(type.body.error.cause.field).toBe('type');
    expect((await identityDetail(api, id)).name).toBe('patch-other');
  });

  test('unknown identity ids are 404 on every item endpoint', async () => {
    const responses = await Promise.all([
      api.get('/identities/no-such-id'),
      api.put('/identities/no-such-id', { body: { name: 'x', isAdmin: false } }),
      api.patch('/identities/no-such-id', { body: { name: 'x' } }),
      api.delete('/identities/no-such-id'),
      api.post('/identities/no-such-id/disable', { body: { durationMinutes: 0 } }),
      api.post('/identities/no-such-id/enable', { body: {} }),
      api.delete('/identities/no-such-id/mfa'),
      api.get('/identities/a%00b'),
    ]);

    expect(responses.map((r) => r.status)).toEqual([404, 404, 404, 404, 404, 404, 404, 404]);
    expect(responses[0]!.body.error.code).toBe('NOT_FOUND');
  });

  test('the default admin cannot be deleted nor stop being an admin', async () => {
    const [admin] = (await api.get(`/identities?filter=isDefaultAdmin = true`)).body.data;

    const deleted = await api.delete(`/identities/${admin.id}`);
    const demoted = await api.patch(`/identities/${admin.id}`, { body: { isAdmin: false } });

    expect(deleted.status).toBe(400);
    expect(deleted.body.error.code).toBe('CANNOT_DELETE_DEFAULT_ADMIN');
    expect(demoted.status).toBe(400);
    expect(demoted.body.error.cause.field).toBe('isAdmin');
    expect((await identityDetail(api, admin.id)).isAdmin).toBe(true);
  });
});
