import type { Webhook } from '../../repositories/webhooks-repository.js';
import type { WebhookView } from '../../schemas/webhook-views.js';

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString());

/**
 * The management view of a webhook, as of `now`: a previous secret whose 24 hours are over is no
 * longer shown, since deliveries are no longer signed with it.
 */
export function webhookView(w: Webhook, now: Date): WebhookView {
  const previous = w.previousSecretExpiresAt;
  return {
    id: w.id,
    name: w.name,
    url: w.url,
    events: w.events,
    enabled: w.enabled,
    disabledReason: w.disabledReason,
    failingSince: iso(w.failingSince),
    previousSecretExpiresAt: previous !== null && new Date(previous) > now ? iso(previous) : null,
    createdAt: new Date(w.createdAt).toISOString(),
    updatedAt: new Date(w.updatedAt).toISOString(),
  };
}
