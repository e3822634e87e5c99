import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectError } from '../helpers/expect-error.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { HOOK_URL, hoursAgo, insertDelivery } from './admin-fixtures.js';

describe("webhooks: a webhook's deliveries as an admin sees them, retries and re-enabling", () => {
  let server: TestServer;
  let api: ManagementApi;

  const delivery = (id: string) => server.app.knex('webhook_deliveries').where({ id }).first();

  async function createWebhook(name: string): Promise<string> {
    const res = await api.post('/webhooks', { body: { name, url: HOOK_URL, events: ['*'] } });
    if (res.status !== 201) throw new Error(`webhook create failed: ${res.status} ${res.text}`);
    return res.body.data.id as string;
  }

  beforeAll(async () => {
    // Delivery rows are written by hand here: no delivery engine may send them meanwhile.
    server = await startTestServer({ webhooks: { deliver: false } });
    api = managementApi(server, await server.adminToken());
  }, 120_000);
  afterAll(() => server?.close());

  test('newest first, paged by cursor, filtered by status and event, each with its attempts', async () => {
    const webhookId = await createWebhook('listed');
    const other = await createWebhook('other');
    const knex = server.app.knex;
    const ids: Record<number, string> = {};
    const attempt = (hours: number, statusCode: number | null, error: string | null) => ({
      attemptedAt: hoursAgo(hours),
      statusCode,
      error,
      durationMs: 40,
    });
    ids[1] = await insertDelivery(knex, {
      webhookId,
      sequence: 1,
      status: 'succeeded',
      createdAt: hoursAgo(5),
      attempts: [attempt(4.9, 503, null), attempt(4.5, 200, null)],
    });
    const failedAt = hoursAgo(4);
    ids[2] = await insertDelivery(knex, {
      webhookId,
      sequence: 2,
      event: 'auth.login',
      status: 'failed',
      createdAt: failedAt,
      attempts: [attempt(3.9, null, 'connect ECONNREFUSED'), attempt(3, 500, null)],
    });
    ids[3] = await insertDelivery(knex, {
      webhookId,
      sequence: 3,
      status: 'pending',
      createdAt: hoursAgo(2),
      nextAttemptAt: hoursAgo(-1),
      attempts: [attempt(1.9, 502, null)],
    });
    ids[5] = await insertDelivery(knex, {
      webhookId,
      sequence: 5,
      event: 'auth.login',
      createdAt: hoursAgo(1),
    });
    await insertDelivery(knex, { webhookId: other, sequence: 4, createdAt: hoursAgo(1) });

    const first = await api.get(`/webhooks/${webhookId}/deliveries?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.data.map((d: any) => d.sequence)).toEqual([5, 3]);
    expect(first.body.meta).toEqual({ pagination: { limit: 2, nextCursor: expect.any(String) } });
    const second = await api.get(
      `/webhooks/${webhookId}/deliveries?limit=2&cursor=${first.body.meta.pagination.nextCursor}`,
    );
    expect(second.body.data.map((d: any) => d.sequence)).toEqual([2, 1]);
    // Two left: the second page is the last, whatever a third request would find.
    expect(second.body.meta.pagination.nextCursor).toBeNull();

    const whole = (await api.get(`/webhooks/${webhookId}/deliveries`)).body;
    expect(whole.meta.pagination).toEqual({ limit: 20, nextCursor: null });
    expect(whole.data).toHaveLength(4);
    const failed = whole.data.find((d: any) => d.sequence === 2);
    expect(failed).toEqual({
      id: ids[2],
      event: 'auth.login',
      sequence: 2,
      status: 'failed',
      attempts: 2,
      createdAt: failedAt.toISOString(),
      nextAttemptAt: null,
      lastAttemptAt: expect.any(String),
      lastStatusCode: 500,
      lastError: null,
      succeededAt: null,
      history: [
        { attemptedAt: expect.any(String), statusCode: null, error: 'connect ECONNREFUSED', durationMs: 40 },
        { attemptedAt: expect.any(String), statusCode: 500, error: null, durationMs: 40 },
      ],
    });
    expect(Date.parse(failed.history[0].attemptedAt)).toBeLessThan(Date.parse(failed.history[1].attemptedAt));
    expect(whole.data.find((d: any) => d.sequence === 1)).toMatchObject({
      status: 'succeeded',
      succeededAt: expect.any(String),
      lastStatusCode: 200,
    });
    expect(whole.data.find((d: any) => d.sequence === 5)).toMatchObject({ attempts: 0, history: [] });

    const byStatus = await api.get(
      `/webhooks/${webhookId}/deliveries?filter=${encodeURIComponent('status = "failed" or')}`,
    );
    expectError(byStatus, { status: 400, code: 'COULD_NOT_VALIDATE' });
    const failedOnly = await api.get(
      `/webhooks/${webhookId}/deliveries?filter=${encodeURIComponent('status = "failed"')}`,
    );
    expect(failedOnly.body.data.map((d: any) => d.id)).toEqual([ids[2]]);
    const logins = await api.get(
      `/webhooks/${webhookId}/deliveries?limit=1&filter=${encodeURIComponent('event = "auth.login"')}`,
    );
    expect(logins.body.data.map((d: any) => d.sequence)).toEqual([5]);
    const older = await api.get(
      `/webhooks/${webhookId}/deliveries?limit=1&cursor=${logins.body.meta.pagination.nextCursor}` +
        `&filter=${encodeURIComponent('event = "auth.login"')}`,
    );
    expect(older.body.data.map((d: any) => d.sequence)).toEqual([2]);
    expect(older.body.meta.pagination.nextCursor).toBeNull();
    const recent = await api.get(
      `/webhooks/${webhookId}/deliveries?filter=${encodeURIComponent(
        `createdAt >= "${hoursAgo(3).toISOString()}"`,
      )}`,
    );
    expect(recent.body.data.map((d: any) => d.sequence)).toEqual([5, 3]);
  });

  test('a delivery attempted more than 50 times shows its latest 50 attempts, oldest first', async () => {
    const webhookId = await createWebhook('many-attempts');
    const attempts = Array.from({ length: 55 }, (_, i) => ({
      attemptedAt: hoursAgo(55 - i),
      statusCode: 500 + (i % 4),
      error: null,
      durationMs: i,
    }));
    await insertDelivery(server.app.knex, { webhookId, sequence: 1, status: 'failed', attempts });

    const [listed] = (await api.get(`/webhooks/${webhookId}/deliveries`)).body.data;

    expect(listed.attempts).toBe(55);
    expect(listed.history.map((a: any) => a.durationMs)).toEqual(attempts.slice(5).map((a) => a.durationMs));
  });

  test('list queries it cannot answer are 400 naming the parameter; an unknown webhook is 404', async () => {
    const webhookId = await createWebhook('queries');
    for (const [query, field] of [
      ['offset=10', 'offset'],
      ['sort=createdAt', 'sort'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=x', 'limit'],
      ['cursor=abc', 'cursor'],
      ['cursor=1&cursor=2', 'cursor'],
      ['filter=name%20%3D%20%22x%22', 'filter'],
      ['filter=status%20%3E%20%22x%22', 'filter'],
    ]) {
      const res = await api.get(`/webhooks/${webhookId}/deliveries?${query}`);
      const error = expectError(res, { status: 400, code: 'COULD_NOT_VALIDATE' });
      expect({ query, field: error.cause.field }).toEqual({ query, field });
    }
    expectError(await api.get('/webhooks/no-such-webhook/deliveries'), { status: 404, code: 'NOT_FOUND' });
  });

  test('retry: pending and failed deliveries become due now; a succeeded one is 409; unknown ones 404', async () => {
    const webhookId = await createWebhook('retried');
    const knex = server.app.knex;
    const failed = await insertDelivery(knex, {
      webhookId,
      sequence: 1,
      status: 'failed',
      createdAt: hoursAgo(30),
      attempts: [{ attemptedAt: hoursAgo(29), statusCode: 500, error: null, durationMs: 12 }],
    });
    const pending = await insertDelivery(knex, {
      webhookId,
      sequence: 2,
      status: 'pending',
      nextAttemptAt: hoursAgo(-2),
    });
    const succeeded = await insertDelivery(knex, {
      webhookId,
      sequence: 3,
      status: 'succeeded',
      attempts: [{ attemptedAt: hoursAgo(0.5), statusCode: 204, error: null, durationMs: 12 }],
    });
    const before = Date.now() - 1000;

    const retried = await api.post(`/webhooks/${webhookId}/deliveries/${failed}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body.data).toMatchObject({
      id: failed,
      status: 'pending',
      attempts: 1,
      lastStatusCode: 500,
      history: [{ statusCode: 500 }],
    });
    expect(Date.parse(retried.body.data.nextAttemptAt)).toBeGreaterThanOrEqual(before);
    expect(await delivery(failed)).toMatchObject({ status: 'pending', attempts: 1 });

    const due = await api.post(`/webhooks/${webhookId}/deliveries/${pending}/retry`);
    expect(due.body.data.status).toBe('pending');
    expect(Date.parse(due.body.data.nextAttemptAt)).toBeLessThan(Date.now() + 60_000);

    const again = await api.post(`/webhooks/${webhookId}/deliveries/${succeeded}/retry`);
    expectError(again, { status: 409, code: 'DELIVERY_ALREADY_SUCCEEDED' });
    expect(await delivery(succeeded)).toMatchObject({ status: 'succeeded', next_attempt_at: null });

    const other = await createWebhook('retried-other');
    expectError(await api.post(`/webhooks/${other}/deliveries/${failed}/retry`), {
      status: 404,
      code: 'NOT_FOUND',
    });
    expectError(await api.post(`/webhooks/${webhookId}/deliveries/no-such-delivery/retry`), {
      status: 404,
      code: 'NOT_FOUND',
    });
    expectError(await api.post(`/webhooks/no-such-webhook/deliveries/${failed}/retry`), {
      status: 404,
      code: 'NOT_FOUND',
    });
  });

  test('enabling a webhook disabled for failing: recent pending deliveries are due now, older ones fail', async () => {
    const webhookId = await createWebhook('failing');
    const knex = server.app.knex;
    const future = hoursAgo(-3);
    const recent = await insertDelivery(knex, {
      webhookId,
      sequence: 1,
      createdAt: hoursAgo(23),
      nextAttemptAt: future,
    });
    const stale = await insertDelivery(knex, {
      webhookId,
      sequence: 2,
      createdAt: hoursAgo(25),
      nextAttemptAt: future,
    });
    const done = await insertDelivery(knex, {
      webhookId,
      sequence: 3,
      status: 'succeeded',
      createdAt: hoursAgo(40),
      attempts: [{ attemptedAt: hoursAgo(40), statusCode: 200, error: null, durationMs: 5 }],
    });
    const lost = await insertDelivery(knex, {
      webhookId,
      sequence: 4,
      status: 'failed',
      createdAt: hoursAgo(1),
      lastError: 'HTTP 500',
    });
    await knex('webhooks')
      .where({ id: webhookId })
      .update({ enabled: false, disabled_reason: 'failing', failing_since: hoursAgo(26) });
    expect((await api.get(`/webhooks/${webhookId}`)).body.data).toMatchObject({
      enabled: false,
      disabledReason: 'failing',
      failingSince: expect.any(String),
    });
    const before = Date.now() - 1000;

    const enabled = await api.patch(`/webhooks/${webhookId}`, { body: { enabled: true } });

    expect(enabled.status).toBe(200);
    expect((await api.get(`/webhooks/${webhookId}`)).body.data).toMatchObject({
      enabled: true,
      disabledReason: null,
      failingSince: null,
    });
    const resumed = await delivery(recent);
    expect(resumed.status).toBe('pending');
    expect(new Date(resumed.next_attempt_at).getTime()).toBeGreaterThanOrEqual(before);
    expect(new Date(resumed.next_attempt_at).getTime()).toBeLessThan(future.getTime());
    expect(await delivery(stale)).toMatchObject({
      status: 'failed',
      next_attempt_at: null,
      last_error: 'expired while the webhook was disabled',
    });
    expect(await delivery(done)).toMatchObject({ status: 'succeeded', last_error: null });
    expect(await delivery(lost)).toMatchObject({ status: 'failed', last_error: 'HTTP 500' });
    const [updated] = await knex('audit_events')
      .where({ event: 'webhook.updated' })
      .whereRaw(`details->>'webhookId' = ?`, [webhookId]);
    expect(updated.details).toMatchObject({
      fields: ['enabled'],
      deliveriesResumed: 1,
      deliveriesExpired: 1,
    });

    // Enabling a webhook that is enabled changes none of its deliveries.
    await knex('webhook_deliveries').where({ id: recent }).update({ next_attempt_at: future });
    expect((await api.patch(`/webhooks/${webhookId}`, { body: { enabled: true } })).status).toBe(200);
    expect(new Date((await delivery(recent)).next_attempt_at).toISOString()).toBe(future.toISOString());
  });

  test('an admin disabling a webhook: no reason is shown, and its deliveries wait', async () => {
    const webhookId = await createWebhook('paused');
    const future = hoursAgo(-3);
    const waiting = await insertDelivery(server.app.knex, { webhookId, sequence: 1, nextAttemptAt: future });

    expect((await api.patch(`/webhooks/${webhookId}`, { body: { enabled: 'false' } })).status).toBe(200);

    expect((await api.get(`/webhooks/${webhookId}`)).body.data).toMatchObject({
      enabled: false,
      disabledReason: null,
    });
    expect(new Date((await delivery(waiting)).next_attempt_at).toISOString()).toBe(future.toISOString());
  });

  test('deleting a webhook deletes its deliveries and their attempts', async () => {
    const webhookId = await createWebhook('deleted');
    const id = await insertDelivery(server.app.knex, {
      webhookId,
      sequence: 1,
      status: 'failed',
      attempts: [{ attemptedAt: new Date(), statusCode: 500, error: null, durationMs: 3 }],
    });

    expect((await api.delete(`/webhooks/${webhookId}`)).status).toBe(200);

    expect(await delivery(id)).toBeUndefined();
    expect(await server.app.knex('webhook_delivery_attempts').where({ delivery_id: id })).toEqual([]);
  });
});
