import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { generateRootCa } from '../../src/crypto/pki.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  createIdentity,
  enrolledUpdbUser,
  identityDetail,
  managementApi,
  passwordLogin,
  registerCa,
  type ManagementApi,
} from './identity-fixtures.js';

describe('/enrollments and /authenticators of the management API', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer({ env: { SVC_EDGE_ENROLLMENT_DURATION: '45m' } });
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();

  test('an enrollment created for an identity shows in its detail and at /enrollments/{id}', async () => {
    const identityId = await createIdentity(api, { name: 'later-enrolled', isAdmin: false });
    const expiresAt = inMinutes(30);

    const res = await api.post('/enrollments', { body: { method: 'ott', identityId, expiresAt } });

    expect(res.status).toBe(201);
    const id = res.body.data.id;
    expect(res.body.data._links.self.href).toBe(`./enrollments/${id}`);
    const item = await api.get(`/enrollments/${id}`);
    expect(item.status).toBe(200);
    expect(item.body.data).toMatchObject({
      id,
      identityId,
      method: 'ott',
      expiresAt,
      token: expect.any(String),
    });
    expect(item.body.data.jwt.split('.')).toHaveLength(3);
    expect((await identityDetail(api, identityId)).enrollment.ott.id).toBe(id);
  });

  test('without expiresAt the configured enrollment duration applies', async () => {
    const identityId = await createIdentity(api, { name: 'default-lifetime', isAdmin: false });

    const res = await api.post('/enrollments', {
      body: { method: 'updb', identityId, username: 'default-lifetime' },
    });

    const item = (await api.get(`/enrollments/${res.body.data.id}`)).body.data;
    const lifetime = new Date(item.expiresAt).getTime() - new Date(item.createdAt).getTime();
    expect(Math.abs(lifetime - 45 * 60_000)).toBeLessThan(5000);
    expect(item.username).toBe('default-lifetime');
  });

  test('a second enrollment of one method, or a second certificate enrollment, is 409', async () => {
    const identityId = await createIdentity(api, {
      name: 'twice-enrolled',
      isAdmin: false,
      enrollment: { ott: true },
    });
    const caId = await registerCa(server, await generateRootCa({ commonName: 'Enrollments test CA' }), {
      isVerified: true,
      isOttCaEnrollmentEnabled: true,
    });

    const sameMethod = await api.post('/enrollments', { body: { method: 'ott', identityId } });
    const otherCert = await api.post('/enrollments', { body: { method: 'ottca', identityId, caId } });
    const updb = await api.post('/enrollments', {
      body: { method: 'updb', identityId, username: 'twice-enrolled' },
    });

    expect(sameMethod.status).toBe(409);
    expect(sameMethod.body.error.code).toBe('CONFLICT');
    expect(otherCert.status).toBe(409);
    expect(updb.status).toBe(201);
  });

  test('a UPDB enrollment for an identity that already has a password, or for a taken username, is 409', async () => {
    const user = await enrolledUpdbUser(server, api, 'has-password');
    const other = await createIdentity(api, { name: 'wants-taken-name', isAdmin: false });

    const again = await api.post('/enrollments', {
      body: { method: 'updb', identityId: user.id, username: 'x-new' },
    });
    const taken = await api.post('/enrollments', {
      body: { method: 'updb', identityId: other, username: 'has-password' },
    });

    expect(again.status).toBe(409);
    expect(taken.status).toBe(409);
    expect(taken.body.error.cause.field).toBe('username');
  });

  test.each([
    ['method is unknown', { method: 'sms', identityId: 'x' }, 'method'],
    ['identityId is missing', { method: 'ott' }, 'identityId'],
    ['updb has no username', { method: 'updb', identityId: 'x' }, 'username'],
    ['ottca has no caId', { method: 'ottca', identityId: 'x' }, 'caId'],
    ['ott has a caId', { method: 'ott', identityId: 'x', caId: 'c' }, 'caId'],
    ['ott has a username', { method: 'ott', identityId: 'x', username: 'u' }, 'username'],
    ['expiresAt is not a date-time', { method: 'ott', identityId: 'x', expiresAt: 'tomorrow' }, 'expiresAt'],
  ])('a create where %s is 400 naming the field', async (_case, body, field) => {
    const res = await api.post('/enrollments', { body });

    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field } });
  });

  test('an expiresAt in the past is 400; an unknown identity or CA is 404', async () => {
    const identityId = await createIdentity(api, { name: 'enrollment-refusals', isAdmin: false });

    const past = await api.post('/enrollments', {
      body: { method: 'ott', identityId, expiresAt: new Date(Date.now() - 60_000).toISOString() },
    });
    const noIdentity = await api.post('/enrollments', { body: { method: 'ott', identityId: 'nobody' } });
    const noCa = await api.post('/enrollments', { body: { method: 'ottca', identityId, caId: 'no-ca' } });

    expect(past.status).toBe(400);
    expect(past.body.error.cause.field).toBe('expiresAt');
    expect(noIdentity.status).toBe(404);
    expect(noIdentity.body.error.cause.field).toBe('identityId');
    expect(noCa.status).toBe(404);
    expect(noCa.body.error.cause.field).toBe('caId');
    expect((await identityDetail(api, identityId)).enrollment).toEqual({});
  });

  test('refresh moves the expiry and keeps the token; a past expiry is 400', async () => {
    const identityId = await createIdentity(api, {
      name: 'refreshed',
      isAdmin: false,
      enrollment: { ott: true },
    });
    const before = (await identityDetail(api, identityId)).enrollment.ott;
    const expiresAt = inMinutes(600);

    const res = await api.post(`/enrollments/${before.id}/refresh`, { body: { expiresAt } });
    const past = await api.post(`/enrollments/${before.id}/refresh`, {
      body: { expiresAt: new Date(Date.now() - 1000).toISOString() },
    });
    const unknown = await api.post('/enrollments/nope/refresh', { body: { expiresAt } });

    expect(res.status).toBe(200);
    const after = (await identityDetail(api, identityId)).enrollment.ott;
    expect(after.expiresAt).toBe(expiresAt);
    expect(after.token).toBe(before.token);
    expect(after.jwt).not.toBe(before.jwt);
    expect(past.status).toBe(400);
    expect(past.body.error.cause.field).toBe('expiresAt');
    expect(unknown.status).toBe(404);
  });

  test('deleting the default enrollment by identity id leaves an identity with no way in', async () => {
    const identityId = await createIdentity(api, {
      name: 'rule-seven',
      isAdmin: false,
      enrollment: { ott: true },
    });

    const found = await api.get(`/enrollments?filter=identityId = "${identityId}"`);
    const deleted = await Promise.all(found.body.data.map((e: any) => api.delete(`/enrollments/${e.id}`)));

    expect(found.body.data.map((e: any) => e.method)).toEqual(['ott']);
    expect(deleted.map((r) => r.status)).toEqual([200]);
    const detail = await identityDetail(api, identityId);
    expect(detail.enrollment).toEqual({});
    expect(detail.authenticators).toEqual({});
    expect((await api.get(`/enrollments/${found.body.data[0].id}`)).status).toBe(404);
    expect((await api.delete(`/enrollments/${found.body.data[0].id}`)).status).toBe(404);
  });

  test('enrollments list filters on method and identityId and paginates', async () => {
    const a = await createIdentity(api, {
      name: 'list-enroll-a',
      isAdmin: false,
      enrollment: { updb: 'list-enroll-a' },
    });
    await createIdentity(api, {
      name: 'list-enroll-b',
      isAdmin: false,
      enrollment: { updb: 'list-enroll-b' },
    });

    const byIdentity = await api.get(`/enrollments?filter=identityId = "${a}" and method = "updb"`);
    const updbPage = await api.get('/enrollments?filter=method = "updb"&limit=1');

    expect(byIdentity.body.data.map((e: any) => e.username)).toEqual(['list-enroll-a']);
    expect(updbPage.body.data).toHaveLength(1);
    expect(updbPage.body.meta.pagination.totalCount).toBeGreaterThanOrEqual(2);
  });

  test('authenticators are listed by identity and method, shown without secrets, and deleted', async () => {
    const user = await enrolledUpdbUser(server, api, 'with-authenticator');

    const list = await api.get(`/authenticators?filter=identityId = "${user.id}" and method = "updb"`);
    const [item] = list.body.data;
    const detail = await api.get(`/authenticators/${item.id}`);
    const removed = await api.delete(`/authenticators/${item.id}`);

    expect(list.status).toBe(200);
    expect(list.body.meta.pagination.totalCount).toBe(1);
    expect(detail.body.data).toEqual({
      id: item.id,
      identityId: user.id,
      method: 'updb',
      username: 'with-authenticator',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(detail.text).not.toContain('argon2');
    expect(removed.status).toBe(200);
    expect((await api.get(`/authenticators/${item.id}`)).status).toBe(404);
    expect((await api.delete(`/authenticators/${item.id}`)).status).toBe(404);
    expect((await passwordLogin(server, user.username, user.password)).status).toBe(401);
    expect((await identityDetail(api, user.id)).authenticators).toEqual({});
  });

  test('an authenticators list with an unknown filter field is 400', async () => {
    const res = await api.get('/authenticators?filter=passwordHash = "x"');

    expect(res.status).toBe(400);
    expect(res.body.error.cause.field).toBe('filter');
  });
});
