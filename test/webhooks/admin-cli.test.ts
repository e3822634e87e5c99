import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createSecretBox } from '../../src/crypto/secret-box.js';
import { oneLine, startCliFixture, type CliFixture } from '../cli/cli-fixture.js';
import { hoursAgo, insertDelivery } from './admin-fixtures.js';

const MASTER_KEY = 'c3ZjLXRlc3QtbWFzdGVyLWtleS0zMi1ieXRlcy0hISE=';
const URL = 'https://receiver.example.com/cli';

describe('svc edge … webhook commands, run as the real CLI process', () => {
  let fixture: CliFixture;
  const box = createSecretBox(Buffer.from(MASTER_KEY, 'base64'));
  const webhookRow = (name: string) => fixture.server.app.knex('webhooks').where({ name }).first();

  beforeAll(async () => {
    // Delivery rows are written by hand here: no delivery engine may send them meanwhile.
    fixture = await startCliFixture({ webhooks: { deliver: false } });
  }, 120_000);
  afterAll(() => fixture?.close());

  test('create prints the secret once, on a line of its own; list shows the webhook without it', async () => {
    const created = await fixture.svc([
      'edge',
      'create',
      'webhook',
      'cli-siem',
      URL,
      '--events',
      'identity.*, auth.login',
    ]);

    expect(created).toMatchObject({ code: 0, stderr: '' });
    const secret = /^ {2}(whsec_\S+)$/m.exec(created.stdout)?.[1];
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.stdout).toContain('Signing secret (shown only now; the controller cannot show it again):');
    const row = await webhookRow('cli-siem');
    expect(created.stdout).toContain(`New webhook cli-siem created, id: ${row.id}`);
    expect(box.open(row.secret_sealed)).toBe(secret);
    expect(row.events).toEqual(['identity.*', 'auth.login']);

    const json = await fixture.svc([
      'edge',
      'create',
      'webhook',
      'cli-json',
      URL,
      '-e',
      '*',
      '--disabled',
      '--json',
    ]);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout);
    expect(parsed).toEqual({
      id: expect.any(String),
      name: 'cli-json',
      secret: expect.stringMatching(/^whsec_/),
    });

    const table = await fixture.svc(['edge', 'list', 'webhooks']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+NAME\s+ENABLED\s+EVENTS\s+URL$/m);
    expect(table.stdout).toMatch(
      /cli-siem\s+true\s+identity\.\*,auth\.login\s+https:\/\/receiver\.example\.com\/cli/,
    );
    expect(table.stdout).toMatch(/cli-json\s+false\s+\*/);
    expect(table.stdout).toContain('results: 2');
    expect(table.stdout).not.toContain('whsec_');
    const filtered = JSON.parse(
      (await fixture.svc(['edge', 'list', 'webhooks', 'enabled = false', '--json'])).stdout,
    );
    expect(filtered.map((w: any) => w.name)).toEqual(['cli-json']);
  });

  test('a refused create exits 1 with one line naming the field; a missing --events is a usage error', async () => {
    const http = await fixture.svc([
      'edge',
      'create',
      'webhook',
      'cli-http',
      'http://receiver.example.com',
      '-e',
      '*',
    ]);
    expect(http.code).toBe(1);
    expect(oneLine(http.stderr)).toBe(true);
    expect(http.stderr).toMatch(/\(COULD_NOT_VALIDATE, url: [^)]+\)\n$/);

    const noEvents = await fixture.svc(['edge', 'create', 'webhook', 'cli-none', URL]);
    expect(noEvents).toMatchObject({
      code: 2,
      stderr: 'svc: svc edge create webhook needs --events <a,b.*>\n',
    });
    expect(await webhookRow('cli-none')).toBeUndefined();
  });

  test('update by name: disable, enable, change the URL and events', async () => {
    await fixture.svc(['edge', 'create', 'webhook', 'cli-update', URL, '-e', '*']);

    const disabled = await fixture.svc(['edge', 'update', 'webhook', 'cli-update', '--enabled', 'false']);
    expect(disabled).toMatchObject({ code: 0, stderr: '' });
    expect(disabled.stdout).toMatch(/^Updated webhook cli-update \(id \w+\); enabled: false$/m);
    expect((await webhookRow('cli-update')).enabled).toBe(false);

    const changed = await fixture.svc([
      'edge',
      'update',
      'webhook',
      'cli-update',
      '--enabled',
      'true',
      '--url',
      'https://other.example.com/x',
      '--events',
      'oidc.device.*',
      '--json',
    ]);
    expect(changed.code).toBe(0);
    expect(JSON.parse(changed.stdout)).toMatchObject({
      name: 'cli-update',
      enabled: true,
      url: 'https://other.example.com/x',
      events: ['oidc.device.*'],
    });

    expect(
      await fixture.svc(['edge', 'update', 'webhook', 'cli-update', '--enabled', 'maybe']),
    ).toMatchObject({
      code: 2,
      stderr: 'svc: --enabled takes true or false\n',
    });
    expect((await fixture.svc(['edge', 'update', 'webhook', 'cli-update'])).code).toBe(2);
    const unknown = await fixture.svc(['edge', 'update', 'webhook', 'no-such-hook', '--enabled', 'true']);
    expect(unknown).toMatchObject({
      code: 1,
      stderr: 'svc: no webhook is named "no-such-hook" or has that id\n',
    });
  });

  test('rotate webhook-secret prints the new secret once and when the old one stops signing', async () => {
    await fixture.svc(['edge', 'create', 'webhook', 'cli-rotate', URL, '-e', '*']);

    const rotated = await fixture.svc(['edge', 'rotate', 'webhook-secret', 'cli-rotate']);

    expect(rotated).toMatchObject({ code: 0, stderr: '' });
    const secret = /^ {2}(whsec_\S+)$/m.exec(rotated.stdout)?.[1];
    const row = await webhookRow('cli-rotate');
    expect(box.open(row.secret_sealed)).toBe(secret);
    expect(rotated.stdout).toContain(
      `The previous secret also signs deliveries until ${new Date(row.previous_secret_expires_at).toISOString()}.`,
    );
  });

  test('list webhook-deliveries by webhook name, newest first, with a filter and a limit; retry one', async () => {
    await fixture.svc(['edge', 'create', 'webhook', 'cli-deliveries', URL, '-e', '*']);
    const { id: webhookId } = await webhookRow('cli-deliveries');
    const knex = fixture.server.app.knex;
    const attempt = { attemptedAt: hoursAgo(1), statusCode: 503, error: null, durationMs: 9 };
    const failed = await insertDelivery(knex, {
      webhookId,
      sequence: 7,
      status: 'failed',
      event: 'auth.login',
      createdAt: hoursAgo(2),
      attempts: [attempt],
    });
    await insertDelivery(knex, { webhookId, sequence: 8, event: 'identity.created', createdAt: hoursAgo(1) });
    await insertDelivery(knex, {
      webhookId,
      sequence: 9,
      status: 'succeeded',
      event: 'identity.deleted',
      attempts: [{ ...attempt, statusCode: 200 }],
    });

    const table = await fixture.svc(['edge', 'list', 'webhook-deliveries', '--webhook', 'cli-deliveries']);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(
      /^ID\s+SEQUENCE\s+EVENT\s+STATUS\s+ATTEMPTS\s+LAST RESULT\s+CREATED AT\s+NEXT ATTEMPT$/,
    );
    expect(lines.slice(1, 4).map((l) => l.split(/\s+/)[1])).toEqual(['9', '8', '7']);
    expect(table.stdout).toMatch(new RegExp(`${failed}\\s+7\\s+auth\\.login\\s+failed\\s+1\\s+HTTP 503`));
    expect(table.stdout).toContain('results: 3');

    const newest = await fixture.svc([
      'edge',
      'list',
      'webhook-deliveries',
      '--webhook',
      webhookId,
      '--limit',
      '2',
      '--json',
    ]);
    expect(JSON.parse(newest.stdout).map((d: any) => d.sequence)).toEqual([9, 8]);
    const onlyFailed = await fixture.svc([
      'edge',
      'list',
      'webhook-deliveries',
      '--webhook',
      'cli-deliveries',
      'status = "failed"',
      '--json',
    ]);
    expect(JSON.parse(onlyFailed.stdout)).toMatchObject([
      { id: failed, status: 'failed', history: [{ statusCode: 503 }] },
    ]);
    const limited = await fixture.svc([
      'edge',
      'list',
      'webhook-deliveries',
      '--webhook',
      'cli-deliveries',
      '--limit',
      '1',
    ]);
    expect(limited.stdout).toContain('results: 1 (the newest; older ones with --limit)');

    const retried = await fixture.svc(['edge', 'retry', 'webhook-delivery', 'cli-deliveries', failed]);
    expect(retried).toMatchObject({ code: 0, stderr: '' });
    expect(retried.stdout).toContain(
      `Delivery ${failed} of webhook cli-deliveries is due again (auth.login)`,
    );
    expect(await knex('webhook_deliveries').where({ id: failed }).first()).toMatchObject({
      status: 'pending',
    });

    const noWebhook = await fixture.svc(['edge', 'list', 'webhook-deliveries']);
    expect(noWebhook.code).toBe(2);
    expect(noWebhook.stderr).toBe('svc: svc edge list webhook-deliveries needs --webhook <name|id>\n');
  });

  test('delete by name, then by id; an unknown webhook exits 1 with one line', async () => {
    await fixture.svc(['edge', 'create', 'webhook', 'cli-delete', URL, '-e', '*']);
    await fixture.svc(['edge', 'create', 'webhook', 'cli-delete-id', URL, '-e', '*']);
    const byId = (await webhookRow('cli-delete-id')).id;

    const byName = await fixture.svc(['edge', 'delete', 'webhook', 'cli-delete']);
    expect(byName).toMatchObject({ code: 0, stderr: '' });
    expect(byName.stdout).toMatch(/^Deleted webhook cli-delete \(id \w+\) and its deliveries$/m);
    expect(await webhookRow('cli-delete')).toBeUndefined();
    expect(JSON.parse((await fixture.svc(['edge', 'delete', 'webhook', byId, '--json'])).stdout)).toEqual({
      id: byId,
      deleted: true,
    });

    const unknown = await fixture.svc(['edge', 'delete', 'webhook', 'cli-delete']);
    expect(unknown).toMatchObject({
      code: 1,
      stderr: 'svc: no webhook is named "cli-delete" or has that id\n',
    });
  });
});
