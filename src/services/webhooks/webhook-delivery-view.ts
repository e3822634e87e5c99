import type { Delivery } from '../../repositories/webhook-delivery-list-repository.js';
import type { WebhookDeliveryView } from '../../schemas/webhook-views.js';

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());

/** A delivery and its latest attempts as the management API lists them. */
export function webhookDeliveryView(d: Delivery): WebhookDeliveryView {
  return {
    id: d.id,
    event: d.event,
    sequence: d.sequence,
    status: d.status,
    attempts: d.attempts,
    createdAt: new Date(d.createdAt).toISOString(),
    nextAttemptAt: iso(d.nextAttemptAt),
    lastAttemptAt: iso(d.lastAttemptAt),
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    succeededAt: iso(d.succeededAt),
    history: d.history.map((a) => ({
      attemptedAt: new Date(a.attemptedAt).toISOString(),
      statusCode: a.statusCode,
      error: a.error,
      durationMs: a.durationMs,
    })),
  };
}
