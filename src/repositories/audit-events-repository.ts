import { createHash } from 'node:crypto';
import type { Db } from '../db/create-database.js';
import { fixedStatement, runFixed } from '../db/fixed-statement.js';

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

/**
 * A data-modifying WITH part that inserts every event of a JSON array (one `?`, `auditRowsJson`):
 * how a statement that a path sends anyway stores its events without another round trip. An
 * empty array inserts nothing; so does a false `condition` (SQL over the statement's other parts).
 */
export const auditRowsCte = (condition = 'true') => `"audit_rows" as (
  insert into "audit_events" ("event", "outcome", "identity_id", "actor_id", "source_address", "request_id", "details")
  select e.event, e.outcome, e.identity_id, e.actor_id, e.source_address, e.request_id, coalesce(e.details, '{}'::jsonb)
    from jsonb_to_recordset(?::jsonb) as e(event text, outcome text, identity_id text, actor_id text,
                                           source_address text, request_id text, details jsonb)
   where ${condition})`;

/** `auditRowsCte`'s binding: the events as one JSON array. */
export function auditRowsJson(events: readonly AuditEventInsert[]): string {
  return JSON.stringify(
    events.map((e) => ({
      event: e.event,
      outcome: e.outcome ?? null,
      identity_id: e.identityId ?? null,
      actor_id: e.actorId ?? null,
      source_address: e.sourceAddress ?? null,
      request_id: e.requestId ?? null,
      details: e.details,
    })),
  );
}

const INSERT_MANY = fixedStatement(`with ${auditRowsCte()} select 1`);

/**
 * One row per key and minute of the database's clock (UTC): a new attempt of the same minute
 * counts in `attempts`, moves `last_at`, and moves `tx` to its own transaction so that readers
 * following the trail by `(tx, id)` see the new count (docs/adr/0015-audit-events-and-webhooks.md).
 * The first attempt's request id, source address and details (its reason) stay.
 */
const UPSERT_ATTEMPT = fixedStatement(`insert into "audit_events" as a
  ("event", "outcome", "identity_id", "actor_id", "source_address", "request_id", "details", "aggregate_key", "last_at")
  values (?, ?, ?, ?, ?, ?, ?::jsonb,
          ? || to_char(date_trunc('minute', clock_timestamp() at time zone 'UTC'), 'YYYY-MM-DD"T"HH24:MI'),
          clock_timestamp())
  on conflict ("aggregate_key") do update set
    attempts = a.attempts + 1, last_at = clock_timestamp(), tx = pg_current_xact_id()`);

/** The stored key of what one aggregated row stands for, hashed so that no part can make it long. */
function hashedKey(parts: readonly string[]): string {
  return `${createHash('sha256').update(JSON.stringify(parts)).digest('base64url')}:`;
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

  /** Inserts several events in one statement. */
  async insertMany(db: Db, events: readonly AuditEventInsert[]): Promise<void> {
    if (events.length === 0) return;
    await runFixed(db, INSERT_MANY, [auditRowsJson(events)]);
  },

  /**
   * Counts one failed or refused attempt in its row of the minute (`UPSERT_ATTEMPT`). `keyParts`:
   * what that row stands for (services/attempt-aggregate-key.ts), stored only as a hash.
   */
  async upsertAttempt(db: Db, e: AuditEventInsert, keyParts: readonly string[]): Promise<void> {
    await runFixed(db, UPSERT_ATTEMPT, [
      e.event,
      e.outcome ?? null,
      e.identityId ?? null,
      e.actorId ?? null,
      e.sourceAddress ?? null,
      e.requestId ?? null,
      JSON.stringify(e.details),
      hashedKey(keyParts),
    ]);
  },

  /** When the newest stored event happened: in a restored database, about when its dump was taken. */
  async newestOccurredAt(db: Db): Promise<Date | null> {
    const row = await db('audit_events').max({ at: 'occurred_at' }).first();
    return row?.at ? new Date(row.at as Date | string) : null;
  },

  /**
   * Whether a stored event's transaction id is at or beyond this cluster's counter: the rows came
   * from another cluster (a restore), and new events would sort before them.
   */
  async aheadOfThisCluster(db: Db): Promise<boolean> {
    const { rows } = await db.raw(
      'SELECT EXISTS (SELECT 1 FROM audit_events WHERE tx >= pg_current_xact_id()) AS ahead',
    );
    return (rows[0] as { ahead: boolean }).ahead;
  },

  /**
   * Every stored event's transaction id set to 0, so that they keep their `id` order and every new
   * event follows them in the trail's `(tx, id)` order.
   */
  async renumberTransactions(db: Db): Promise<void> {
    await db.raw("UPDATE audit_events SET tx = '0'::xid8");
  },
};
