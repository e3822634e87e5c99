import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { pino } from 'pino';
import { createSecretBox } from '../../src/crypto/secret-box.js';
import { expectError } from '../helpers/expect-error.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { enrolledUpdbUser, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { HOOK_URL } from './admin-fixtures.js';

/** The master key test servers run with (test/helpers/test-server.ts). */
const MASTER_KEY = 'c3ZjLXRlc3QtbWFzdGVyLWtleS0zMi1ieXRlcy0hISE=';
const SECRET_FORMAT = /^whsec_[A-Za-z0-9+/]{43}=$/;

describe('webhooks: the management API', () => {
  const logLines: string[] = [];
  const box = createSecretBox(Buffer.from(MASTER_KEY, 'base64'));
  let server: TestServer;
  let api: ManagementApi;

  const row = (id: string) => server.app.knex('webhooks').where({ id }).first();
  const storedEvents = async (webhookId: string) =>
    (
      (await server.app
        .knex('audit_events')
        .whereRaw(`details->>'webhookId' = ?`, [webhookId])
        .orderBy('id')
        .select('event', 'details', 'actor_id')) as { event: string; details: any; actor_id: string }[]
    ).map((e) => ({ event: e.event, details: e.details, actorId: e.actor_id }));

  async function create(body: Record<string, unknown>) {
    const res = await api.post('/webhooks', { body });
    if (res.status !== 201) throw new Error(`webhook create failed: ${res.status} ${res.text}`);
    return res.body.data as { id: string; secret: string };
  }

  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (chunk: string) => void logLines.push(chunk) });
    server = await startTestServer({ logger, webhooks: { deliver: false } });
    api = managementApi(server, await server.adminToken());
  }, 120_000);
  afterAll(() => server?.close());

  test('create answers the secret once; it is stored sealed with the master key and never shown again', async () => {
    const res = await api.post('/webhooks', {
      body: { name: 'siem', url: HOOK_URL, events: ['identity.*', 'auth.login', 'identity.*'] },
    });

    expect(res.status).toBe(201);
    const { id, secret } = res.body.data;
    expect(res.body.data).toEqual({ id, _links: { self: { href: `./webhooks/${id}` } }, secret });
    expect(secret).toMatch(SECRET_FORMAT);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    const stored = await row(id);
    expect(JSON.stringify(stored)).not.toContain(secret.slice('whsec_'.length, 30));
    expect(box.open(stored.secret_sealed)).toBe(secret);
    expect(stored.previous_secret_sealed).toBeNull();

    const detail = await api.get(`/webhooks/${id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.data).toEqual({
      id,
      name: 'siem',
      url: HOOK_URL,
      events: ['identity.*', 'auth.login'],
      enabled: true,
      disabledReason: null,
      failingSince: null,
      previousSecretExpiresAt: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const listed = await api.get('/webhooks');
    expect(listed.text).not.toContain(secret);
    expect(detail.text).not.toContain(secret);
    expect(logLines.join('')).not.toContain(secret);
  });

  test('rotation: a new secret once, the previous one kept sealed for 24 hours', async () => {
    const { id, secret } = await create({ name: 'rotating', url: HOOK_URL, events: ['*'] });
    const before = Date.now();

    const res = await api.post(`/webhooks/${id}/rotate-secret`);

    expect(res.status).toBe(200);
    const { secret: next, previousSecretExpiresAt } = res.body.data;
    expect(Object.keys(res.body.data).sort()).toEqual(['previousSecretExpiresAt', 'secret']);
    expect(next).toMatch(SECRET_FORMAT);
    expect(next).not.toBe(secret);
    const expires = Date.parse(previousSecretExpiresAt);
    expect(expires).toBeGreaterThanOrEqual(before + 24 * 3_600_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 24 * 3_600_000 + 1000);
    const stored = await row(id);
    expect(box.open(stored.secret_sealed)).toBe(next);
    expect(box.open(stored.previous_secret_sealed)).toBe(secret);
    expect(new Date(stored.previous_secret_expires_at).toISOString()).toBe(previousSecretExpiresAt);
    expect((await api.get(`/webhooks/${id}`)).body.data.previousSecretExpiresAt).toBe(
      previousSecretExpiresAt,
    );

    // A second rotation: the first secret is dropped, the one it replaced is now the previous one.
    const again = (await api.post(`/webhooks/${id}/rotate-secret`)).body.data.secret;
    const twice = await row(id);
    expect(box.open(twice.secret_sealed)).toBe(again);
    expect(box.open(twice.previous_secret_sealed)).toBe(next);
    expect(logLines.join('')).not.toContain(next);

    // Once its 24 hours are over, the view no longer shows the previous secret.
    await server.app
      .knex('webhooks')
      .where({ id })
      .update({ previous_secret_expires_at: new Date(before - 1000) });
    expect((await api.get(`/webhooks/${id}`)).body.data.previousSecretExpiresAt).toBeNull();

    expectError(await api.post('/webhooks/no-such-webhook/rotate-secret'), {
      status: 404,
      code: 'NOT_FOUND',
    });
  });

  test('the URL: https only, a real absolute URL', async () => {
    for (const url of [
      'http://receiver.example.com/hook',
      'not a url',
      '/relative/path',
      'ftp://example.com/x',
    ]) {
      const res = await api.post('/webhooks', { body: { name: 'bad-url', url, events: ['*'] } });
      const error = expectError(res, { status: 400, code: 'COULD_NOT_VALIDATE' });
      expect({ url, field: error.cause.field }).toEqual({ url, field: 'url' });
    }
    const { id } = await create({ name: 'url-change', url: HOOK_URL, events: ['*'] });
    const patched = await api.patch(`/webhooks/${id}`, { body: { url: 'http://receiver.example.com/x' } });
    expect(expectError(patched, { status: 400, code: 'COULD_NOT_VALIDATE' }).cause.field).toBe('url');
    expect((await api.get(`/webhooks/${id}`)).body.data.url).toBe(HOOK_URL);
  });

  test('events: names, prefixes and *; never empty, malformed or more than 50', async () => {
    const good = [
      '*',
      'identity.*',
      'oidc.device.*',
      'identity.created',
      'oidc.device.user-code-wrong',
      'a1.b-2',
    ];
    const { id } = await create({ name: 'events-ok', url: HOOK_URL, events: good });
    expect((await api.get(`/webhooks/${id}`)).body.data.events).toEqual(good);

    const many = Array.from({ length: 51 }, (_, i) => `event.number-${i}`);
    for (const events of [
      [],
      'identity.*',
      ['identity'],
      ['Identity.Created'],
      ['identity.'],
      ['identity.*.created'],
      ['identity*'],
      ['.identity'],
      ['identity created'],
      [7],
      many,
    ]) {
      const res = await api.post('/webhooks', { body: { name: 'events-bad', url: HOOK_URL, events } });
      const error = expectError(res, { status: 400, code: 'COULD_NOT_VALIDATE' });
      expect({ events, field: String(error.cause.field).split('.')[0] }).toEqual({ events, field: 'events' });
    }
    expect(
      (await api.post('/webhooks', { body: { name: 'events-50', url: HOOK_URL, events: many.slice(1) } }))
        .status,
    ).toBe(201);
    const res = await api.post('/webhooks', { body: { name: 'events-missing', url: HOOK_URL } });
    expect(expectError(res, { status: 400, code: 'COULD_NOT_VALIDATE' }).cause.field).toBe('events');
  });

  test('names are unique (409 naming name); unknown members are refused', async () => {
    const { id } = await create({ name: 'unique-one', url: HOOK_URL, events: ['*'] });
    await create({ name: 'unique-two', url: HOOK_URL, events: ['*'] });

    const duplicate = await api.post('/webhooks', {
      body: { name: 'unique-one', url: HOOK_URL, events: ['*'] },
    });
    expect(expectError(duplicate, { status: 409, code: 'CONFLICT' }).cause).toEqual({
      field: 'name',
      reason: 'a webhook with this name exists',
    });
    const renamed = await api.patch(`/webhooks/${id}`, { body: { name: 'unique-two' } });
    expect(expectError(renamed, { status: 409, code: 'CONFLICT' }).cause.field).toBe('name');

    for (const body of [
      { name: 'extra', url: HOOK_URL, events: ['*'], secret: 'whsec_mine' },
      { name: 'extra', url: HOOK_URL, events: ['*'], tags: {} },
    ]) {
      const res = await api.post('/webhooks', { body });
      expect(expectError(res, { status: 400, code: 'COULD_NOT_VALIDATE' }).cause.reason).toBe(
        'is not a member of this body',
      );
    }
    const patchExtra = await api.patch(`/webhooks/${id}`, { body: { disabledReason: null } });
    expect(expectError(patchExtra, { status: 400, code: 'COULD_NOT_VALIDATE' }).cause.field).toBe(
      'disabledReason',
    );
    const badName = await api.post('/webhooks', { body: { name: '', url: HOOK_URL, events: ['*'] } });
    expect(expectError(badName, { status: 400, code: 'COULD_NOT_VALIDATE' }).cause.field).toBe('name');
  });

  test('list: filters, sorting and paging like the other management lists', async () => {
    for (const name of ['page-a', 'page-b', 'page-c']) {
      await create({ name, url: HOOK_URL, events: ['identity.*'], enabled: name !== 'page-b' });
    }
    const filter = encodeURIComponent('name contains "page-" and enabled = true');
    const page = await api.get(`/webhooks?filter=${filter}&sort=name%20desc&limit=1&offset=1`);

    expect(page.status).toBe(200);
    expect(page.body.meta).toEqual({ pagination: { limit: 1, offset: 1, totalCount: 2 } });
    expect(page.body.data.map((w: any) => w.name)).toEqual(['page-a']);
    const disabled = await api.get(
      `/webhooks?filter=${encodeURIComponent('enabled = false and name = "page-b"')}`,
    );
    expect(disabled.body.data).toMatchObject([{ name: 'page-b', enabled: false, disabledReason: null }]);
    expectError(await api.get('/webhooks?filter=secret%20%3D%20%22x%22'), {
      status: 400,
      code: 'COULD_NOT_VALIDATE',
    });
    expectError(await api.get('/webhooks/no-such-webhook'), { status: 404, code: 'NOT_FOUND' });
  });

  test('PATCH and DELETE; every change is a stored audit event without the URL path, query or secrets', async () => {
    const { id, secret } = await create({ name: 'audited', url: HOOK_URL, events: ['identity.*'] });
    const patched = await api.patch(`/webhooks/${id}`, {
      body: {
        name: 'audited-2',
        events: ['auth.*'],
        url: 'https://other.example.net:8443/in?key=receiver-key',
      },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toEqual({ data: {}, meta: {} });
    expect((await api.get(`/webhooks/${id}`)).body.data).toMatchObject({
      name: 'audited-2',
      events: ['auth.*'],
      url: 'https://other.example.net:8443/in?key=receiver-key',
    });
    const rotated = (await api.post(`/webhooks/${id}/rotate-secret`)).body.data.secret;
    expect((await api.delete(`/webhooks/${id}`)).status).toBe(200);
    expectError(await api.get(`/webhooks/${id}`), { status: 404, code: 'NOT_FOUND' });
    expectError(await api.delete(`/webhooks/${id}`), { status: 404, code: 'NOT_FOUND' });
    expectError(await api.patch(`/webhooks/${id}`, { body: { enabled: true } }), {
      status: 404,
      code: 'NOT_FOUND',
    });

    const events = await storedEvents(id);
    expect(events.map((e) => e.event)).toEqual([
      'webhook.created',
      'webhook.updated',
      'webhook.secret-rotated',
      'webhook.deleted',
    ]);
    expect(events[0]!.details).toMatchObject({
      webhookId: id,
      name: 'audited',
      origin: 'https://receiver.example.com',
      events: ['identity.*'],
    });
    expect(events[1]!.details).toMatchObject({
      webhookId: id,
      name: 'audited-2',
      fields: ['events', 'name', 'url'],
      origin: 'https://other.example.net:8443',
    });
    expect(events[2]!.details).toMatchObject({ webhookId: id, name: 'audited-2' });
    expect(events[3]!.details).toMatchObject({ webhookId: id, name: 'audited-2' });
    expect(events.every((e) => typeof e.actorId === 'string')).toBe(true);
    const stored = JSON.stringify(events);
    for (const hidden of [
      'receiver-own-token',
      'receiver-key',
      '/hooks/svc',
      '/in',
      secret,
      rotated,
      'whsec_',
    ]) {
      expect({ hidden, stored: stored.includes(hidden) }).toEqual({ hidden, stored: false });
    }
    // A refused change stores nothing.
    const refused = await api.post('/webhooks', {
      body: { name: 'never', url: 'http://x.example', events: ['*'] },
    });
    expect(refused.status).toBe(400);
    const never = await server.app.knex('audit_events').whereRaw(`details->>'name' = 'never'`);
    expect(never).toEqual([]);
  });

  test('a caller who is not an admin is refused every webhook operation', async () => {
    const { id } = await create({ name: 'not-yours', url: HOOK_URL, events: ['*'] });
    const user = await enrolledUpdbUser(server, api, 'webhook-non-admin');
    const asUser = managementApi(server, user.token);
    const calls = [
      asUser.get('/webhooks'),
      asUser.post('/webhooks', { body: { name: 'mine', url: HOOK_URL, events: ['*'] } }),
      asUser.get(`/webhooks/${id}`),
      asUser.patch(`/webhooks/${id}`, { body: { enabled: false } }),
      asUser.delete(`/webhooks/${id}`),
      asUser.post(`/webhooks/${id}/rotate-secret`),
      asUser.get(`/webhooks/${id}/deliveries`),
      asUser.post(`/webhooks/${id}/deliveries/x/retry`),
    ];
    for (const res of await Promise.all(calls)) expectError(res, { status: 403, code: 'FORBIDDEN' });
    expect((await api.get(`/webhooks/${id}`)).body.data).toMatchObject({ name: 'not-yours', enabled: true });
    expect((await api.get(`/webhooks?filter=${encodeURIComponent('name = "mine"')}`)).body.data).toEqual([]);
  });
});
