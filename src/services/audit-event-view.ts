import type { AuditEventRow } from '../repositories/audit-event-row.js';
import type { AuditEventView } from '../schemas/audit-event-views.js';

/**
 * A stored audit event as the management API lists it and as webhook deliveries carry it in
 * `data`: the named columns as camelCase fields, every other field of the event under `details`.
 * An aggregated failure (failed attempts per event, outcome, method, identity, address network and
 * minute) has `attempts` above 1 and `lastAt`, the time of its latest attempt.
 */
export function auditEventView(row: AuditEventRow): AuditEventView {
  return {
    id: row.id,
    event: row.event,
    occurredAt: new Date(row.occurred_at).toISOString(),
    ...(row.outcome !== null && { outcome: row.outcome }),
    ...(row.identity_id !== null && { identityId: row.identity_id }),
    ...(row.actor_id !== null && { actorId: row.actor_id }),
    ...(row.source_address !== null && { sourceAddress: row.source_address }),
    ...(row.request_id !== null && { requestId: row.request_id }),
    attempts: row.attempts,
    ...(row.last_at !== null && { lastAt: new Date(row.last_at).toISOString() }),
    details: row.details,
  };
}
