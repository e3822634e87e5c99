/**
 * A stored audit event as its columns hold it (migrations/022_audit_events.ts). `id` and `tx` are
 * read as text (`id::text`, `tx::text`): both are 64-bit and the drivers disagree on how to return
 * them.
 */
export interface AuditEventRow {
  id: string;
  tx: string;
  occurred_at: Date;
  last_at: Date | null;
  event: string;
  outcome: string | null;
  identity_id: string | null;
  actor_id: string | null;
  source_address: string | null;
  request_id: string | null;
  attempts: number;
  details: Record<string, unknown>;
}

/** The select list that reads an `AuditEventRow` (ids as text). */
export const AUDIT_EVENT_COLUMNS =
  'id::text AS id, tx::text AS tx, occurred_at, last_at, event, outcome, identity_id, actor_id, ' +
  'source_address, request_id, attempts, details';
