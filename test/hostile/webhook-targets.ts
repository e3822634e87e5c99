import type { TestServer } from '../helpers/test-server.js';
import { hoursAgo, insertDelivery } from '../webhooks/admin-fixtures.js';

/**
 * An event no hostile request can cause: a secret is rotated only by a valid request on a real
 * webhook, which the suite never sends. The webhooks below therefore get no new deliveries while
 * the suite runs, and their rows stay as they are.
 */
const QUIET_EVENT = 'webhook.secret-rotated';

/**
 * Webhooks for the fuzzers to aim real ids at (`{id}` under `/webhooks`, `{deliveryId}` under
 * `/deliveries`): one enabled and one disabled, made through the management API, with a
 * succeeded and a failed delivery each, written as the delivery engine leaves them (neither is
 * ever sent again). Their URL is under `.invalid` (RFC 6761): nothing could answer it.
 */
export async function webhookTargets(
  server: TestServer,
  session: string,
): Promise<{ webhooks: string[]; deliveries: string[] }> {
  const webhooks: string[] = [];
  const deliveries: string[] = [];
  for (const [name, enabled] of [
    ['hostile-hook', true],
    ['hostile-hook-disabled', false],
  ] as const) {
    const res = await server.client.post('/edge/management/v1/webhooks', {
      headers: { 'svc-session': session },
      body: { name, url: 'https://receiver.invalid/hooks/svc', events: [QUIET_EVENT], enabled },
    });
    if (res.status !== 201) throw new Error(`webhook create failed: ${res.status} ${res.text}`);
    const webhookId = res.body.data.id as string;
    webhooks.push(webhookId);
    const attempt = (hours: number, statusCode: number | null, error: string | null) => ({
      attemptedAt: hoursAgo(hours),
      statusCode,
      error,
      durationMs: 40,
    });
    deliveries.push(
      await insertDelivery(server.app.knex, {
        webhookId,
        sequence: 1,
        event: QUIET_EVENT,
        status: 'succeeded',
        createdAt: hoursAgo(3),
        attempts: [attempt(2.9, 503, 'the receiver answered 503'), attempt(2.5, 204, null)],
      }),
      await insertDelivery(server.app.knex, {
        webhookId,
        sequence: 2,
        event: QUIET_EVENT,
        status: 'failed',
        createdAt: hoursAgo(30),
        attempts: [attempt(29, null, 'connection refused')],
      }),
    );
  }
  return { webhooks, deliveries };
}
