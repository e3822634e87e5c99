import type { Knex } from 'knex';
import { AUDIT_EVENT_COLUMNS, type AuditEventRow } from '../../src/repositories/audit-event-row.js';

/** The stored audit events named `event`, oldest first (optionally only those matching `where`). */
export async function storedEvents(
  knex: Knex,
  event: string,
  where: Record<string, unknown> = {},
): Promise<AuditEventRow[]> {
  return knex('audit_events')
    .select(knex.raw(AUDIT_EVENT_COLUMNS))
    .where({ event, ...where })
    .orderBy('id');
}

/** Every stored audit event of one request. */
export async function storedOfRequest(knex: Knex, requestId: string): Promise<AuditEventRow[]> {
  return knex('audit_events')
    .select(knex.raw(AUDIT_EVENT_COLUMNS))
    .where({ request_id: requestId })
    .orderBy('id');
}

/** The one stored event of `event` of a request; fails unless there is exactly one. */
export async function oneStored(knex: Knex, event: string, requestId: string): Promise<AuditEventRow> {
  const rows = (await storedOfRequest(knex, requestId)).filter((r) => r.event === event);
  if (rows.length !== 1) {
    throw new Error(`expected one stored ${event} of request ${requestId}, found ${rows.length}`);
  }
  return rows[0]!;
}
