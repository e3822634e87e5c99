import type { Db } from '../db/create-database.js';

/** One event as it is stored: its indexed fields, and every other field in `details`. */
export interface AuditEventInsert {
  event: string;
  outcome?: string;
  identityId?: string;
  actorId?: string;
  sourceAddress?: string;
  requestId?: string;
  details: Record<string, unknown>;
}

/** Writes of the stored audit trail (migrations/022_audit_events.ts). */
export const auditEventsRepository = {
  /** Inserts one event in `db`, the transaction of the change it records. */
  async insert(db: Db, e: AuditEventInsert): Promise<void> {
    await db('audit_events').insert({
      event: e.event,
      outcome: e.outcome ?? null,
      identity_id: e.identityId ?? null,
      actor_id: e.actorId ?? null,
      source_address: e.sourceAddress ?? null,
      request_id: e.requestId ?? null,
      details: JSON.stringify(e.details),
    });
  },
};
