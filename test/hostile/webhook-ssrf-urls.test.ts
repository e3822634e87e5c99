import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import fc from 'fast-check';
import { expectError } from '../helpers/expect-error.js';
import { usingPostgres } from '../helpers/test-database.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { businessRows } from './business-rows.js';
import { REFUSED_TARGET_URLS, refusedTargetUrl } from './webhook-target-urls.js';

/** CI replays one fixed seed; `npm run fuzz` passes a random one (printed, so it can be replayed). */
const SEED = Number(process.env.FUZZ_SEED ?? 42);
const DRAWN = 150;
const DB = usingPostgres ? 'PostgreSQL' : 'PGlite';

const WEBHOOK_EVENTS = ['webhook.created', 'webhook.updated', 'webhook.deleted', 'webhook.secret-rotated'];

/**
 * Server-side request forgery through the management API, with private targets not allowed (the
 * default): a webhook can be neither created nor moved to an internal address, whatever the
 * spelling, and a refused URL leaves no row and no audit event behind.
 */
describe(`webhook URLs naming internal targets are refused by the API (${DB})`, () => {
  let server: TestServer;
  let api: ManagementApi;
  /** A webhook with an acceptable URL, for the PATCH requests to aim at. */
  let existing: { id: string; url: string };

  const storedWebhookEvents = async () =>
    Number(
      (await server.app.knex('audit_events').whereIn('event', WEBHOOK_EVENTS).count({ n: '*' }).first())?.n ??
        0,
    );

  beforeAll(async () => {
    server = await startTestServer({ webhooks: { deliver: false } });
    api = managementApi(server, await server.adminToken());
    const url = 'https://receiver.invalid/hooks/svc?token=receiver-own';
    const created = await api.post('/webhooks', {
      body: { name: 'ssrf-existing', url, events: ['identity.created'] },
    });
    expect(created.status).toBe(201);
    existing = { id: created.body.data.id as string, url };
  });
  afterAll(() => server?.close());

  /** POST and PATCH with `url`; both must be 400 naming `url` (and for what, when `because` says). */
  async function expectRefused(url: string, name: string, because?: RegExp): Promise<void> {
    const create = await api.post('/webhooks', { body: { name, url, events: ['identity.created'] } });
    // With other changes that are valid: none of them may be applied either.
    const patch = await api.patch(`/webhooks/${existing.id}`, {
      body: { url, name: `${name}-renamed`, events: ['*'], enabled: false },
    });
    for (const [what, res] of [
      ['POST', create],
      ['PATCH', patch],
    ] as const) {
      // Named in the failure: which URL got what.
      expect({ what, url, status: res.status, field: res.body.error?.cause?.field }).toEqual({
        what,
        url,
        status: 400,
        field: 'url',
      });
      expectError(res, { status: 400, code: 'COULD_NOT_VALIDATE' });
      if (because)
        expect({ url, reason: res.body.error.cause.reason }).toEqual({
          url,
          reason: expect.stringMatching(because),
        });
    }
  }

  test('the listed spellings of loopback, metadata, private and local targets, and URLs that are no plain https:// URL', async () => {
    const rowsBefore = await businessRows(server.app.knex);
    const eventsBefore = await storedWebhookEvents();
    for (const [i, url] of REFUSED_TARGET_URLS.entries()) await expectRefused(url, `ssrf-listed-${i}`);
    expect(await businessRows(server.app.knex)).toEqual(rowsBefore);
    expect(await storedWebhookEvents()).toBe(eventsBefore);
  });

  test('internal addresses and localhost names drawn at random, in every spelling, with any port and path', async () => {
    const urls = fc.sample(refusedTargetUrl, { seed: SEED, numRuns: DRAWN });
    console.log(
      `hostile webhook URLs: ${urls.length} drawn, seed ${SEED} (${DB}; replay with FUZZ_SEED=${SEED})`,
    );
    const rowsBefore = await businessRows(server.app.knex);
    const eventsBefore = await storedWebhookEvents();
    // Each is a well-formed https:// URL: refused for where it points, not for its form.
    const forTarget =
      /^names (the [a-zA-Z-]+ address \S+|localhost) \(allowed only with webhooks\.allowPrivateTargets\)$/;
    for (const [i, url] of urls.entries()) await expectRefused(url, `ssrf-drawn-${i}`, forTarget);
    expect(await businessRows(server.app.knex)).toEqual(rowsBefore);
    expect(await storedWebhookEvents()).toBe(eventsBefore);
  });

  test('after all that, the only webhook is the one made first, unchanged', async () => {
    const list = await api.get('/webhooks?limit=500');
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      expect.objectContaining({
        id: existing.id,
        name: 'ssrf-existing',
        url: existing.url,
        events: ['identity.created'],
        enabled: true,
      }),
    ]);
  });
});
