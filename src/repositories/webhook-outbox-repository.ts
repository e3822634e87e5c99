import type { Db } from '../db/create-database.js';
import { fixedStatement, runFixed } from '../db/fixed-statement.js';
import { AUDIT_EVENT_COLUMNS, type AuditEventRow } from './audit-event-row.js';

/**
 * Only events whose transaction is below the oldest one still running: every transaction there
 * has ended, so no event can still appear behind the cursor (docs/adr/0015-audit-events-and-webhooks.md).
 */
const SETTLED = 'e.tx < pg_snapshot_xmin(pg_current_snapshot())';

/**
 * The next events after the cursor, in `(tx, id)` order, each with the sequence number it gets and
 * the cursor they were read after. Read with no lock, once a second: when nothing is new it is one
 * probe of the trail's `(tx, id)` index.
 */
const NEXT_EVENTS = fixedStatement(
  `SELECT d.last_tx::text AS after_tx, d.last_event_id::text AS after_event_id,
          d.last_sequence::text AS after_sequence, (d.last_sequence + e.n)::text AS sequence, e.*
   FROM webhook_dispatch d
   CROSS JOIN LATERAL (
     SELECT ${AUDIT_EVENT_COLUMNS}, e.aggregate_key IS NOT NULL AS aggregated,
            row_number() OVER (ORDER BY e.tx, e.id) AS n
     FROM audit_events e
     WHERE (e.tx, e.id) > (d.last_tx, d.last_event_id) AND ${SETTLED}
     ORDER BY e.tx, e.id
     LIMIT ?
   ) e
   WHERE d.id = 1
   ORDER BY e.n`,
);

/**
 * One delivery per event and subscribed enabled webhook, and the cursor's move, in one statement,
 * only if the cursor is still where the events were read after: the fan-out's row is locked for
 * the statement, and an instance that finds it moved (another one wrote the same events first)
 * writes nothing. A disabled webhook gets no deliveries, whatever disabled it: the events of the
 * time it is disabled are never sent to it, and its backlog stays the one it had when it was
 * disabled. A pattern is an event name, `prefix.*` (every event under the prefix) or `*`.
 *
 * An aggregated row (failed logins, failed second factors) comes back to the fan-out each time its
 * `attempts` grows (the upsert moves its `tx`): its delivery is due once the row's minute has
 * closed, and while that delivery is pending and unsent (and unclaimed), the row seen again
 * replaces its body and sequence number instead of adding a delivery: one per row and webhook.
 */
const INSERT_DELIVERIES = fixedStatement(
  `WITH cursor AS (
     SELECT id FROM webhook_dispatch
     WHERE id = 1 AND last_tx = ?::xid8 AND last_event_id = ?::bigint AND last_sequence = ?::bigint
     FOR UPDATE
   ), events AS (
     SELECT e.* FROM cursor,
       jsonb_to_recordset(?::jsonb) AS e(id bigint, event text, sequence bigint, payload text, due_at timestamptz)
   ), inserted AS (
     INSERT INTO webhook_deliveries AS d
       (id, webhook_id, event_id, event, sequence, payload, status, attempts, created_at, next_attempt_at)
     SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), w.id, e.id, e.event, e.sequence, e.payload,
            'pending', 0, ?::timestamptz, coalesce(e.due_at, ?::timestamptz)
     FROM events e
     JOIN webhooks w ON w.enabled AND EXISTS (
       SELECT 1 FROM jsonb_array_elements_text(w.events) AS p(pattern)
       WHERE p.pattern IN ('*', e.event)
          OR (right(p.pattern, 2) = '.*' AND starts_with(e.event, left(p.pattern, -1)))
     )
     ON CONFLICT (webhook_id, event_id) WHERE status = 'pending' AND attempts = 0
     DO UPDATE SET payload = excluded.payload, sequence = excluded.sequence,
                   next_attempt_at = greatest(d.next_attempt_at, excluded.next_attempt_at)
       WHERE d.claimed_until IS NULL
     RETURNING 1
   ), moved AS (
     UPDATE webhook_dispatch d SET last_tx = ?::xid8, last_event_id = ?::bigint, last_sequence = ?::bigint
     FROM cursor
     WHERE d.id = cursor.id
     RETURNING 1
   )
   SELECT (SELECT count(*) FROM inserted)::int AS deliveries, (SELECT count(*) FROM moved)::int AS moved`,
);

/**
 * Claims due deliveries with a lease, in one statement: of each enabled webhook with no delivery
 * in flight (no unexpired claim), its delivery due first, and of those the ones due first, up to
 * the limit. A webhook thus holds at most one send at a time, however slow its receiver, and the
 * others take turns with it; a disabled webhook's deliveries are never read (the due index is per
 * webhook). The lease counts on the database's clock, which every instance shares; when a
 * delivery is due counts on the caller's (a parameter, so that the index is read from its start
 * up to now only). The head rows are locked with SKIP LOCKED and checked again as they are now:
 * of two instances claiming together, one gets a webhook's delivery.
 */
const CLAIM_DUE = fixedStatement(
  `WITH heads AS (
     SELECT due.id, due.next_attempt_at
     FROM webhooks w
     CROSS JOIN LATERAL (
       SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
       WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= ?::timestamptz
       ORDER BY d.next_attempt_at
       LIMIT 1
     ) due
     WHERE w.enabled AND NOT EXISTS (
       SELECT 1 FROM webhook_deliveries c
       WHERE c.webhook_id = w.id AND c.claimed_until IS NOT NULL AND c.claimed_until >= now()
     )
     ORDER BY due.next_attempt_at
     LIMIT ?::int
   ), locked AS (
     SELECT d.id FROM webhook_deliveries d JOIN heads h ON h.id = d.id
     WHERE d.status = 'pending' AND (d.claimed_until IS NULL OR d.claimed_until < now())
     FOR UPDATE OF d SKIP LOCKED
   )
   UPDATE webhook_deliveries d SET claimed_by = ?::text, claimed_until = now() + ?::interval
   FROM webhooks w, locked
   WHERE w.id = d.webhook_id AND d.id = locked.id
   RETURNING d.id, d.webhook_id, d.payload, d.attempts, d.created_at, w.url, w.secret_sealed,
     CASE WHEN w.previous_secret_expires_at > ?::timestamptz THEN w.previous_secret_sealed END
       AS previous_secret_sealed`,
);

/**
 * An attempt's outcome, only while this instance still holds the claim: the delivery's new state,
 * the attempt's row, and the webhook's run of failures (written only when it changes, so that
 * deliveries to one webhook do not queue on its row). Answers the webhook's `failing_since` after
 * the attempt.
 */
const ACKNOWLEDGE = fixedStatement(
  `WITH a AS (
     SELECT ?::text AS id, ?::text AS instance, ?::boolean AS ok, ?::timestamptz AS at,
            ?::int AS status_code, ?::text AS error, ?::int AS duration_ms, ?::timestamptz AS next_at,
            ?::timestamptz AS cutoff
   ), d AS (
     UPDATE webhook_deliveries d SET
       status = CASE WHEN a.ok THEN 'succeeded' WHEN d.created_at <= a.cutoff THEN 'failed' ELSE 'pending' END,
       attempts = d.attempts + 1,
       next_attempt_at = CASE WHEN a.ok OR d.created_at <= a.cutoff THEN NULL ELSE a.next_at END,
       last_attempt_at = a.at, last_status_code = a.status_code, last_error = a.error,
       succeeded_at = CASE WHEN a.ok THEN a.at ELSE d.succeeded_at END,
       claimed_by = NULL, claimed_until = NULL
     FROM a
     WHERE d.id = a.id AND d.claimed_by = a.instance
     RETURNING d.id, d.webhook_id, d.status
   ), attempt AS (
     INSERT INTO webhook_delivery_attempts (delivery_id, attempted_at, status_code, error, duration_ms, instance_id)
     SELECT d.id, a.at, a.status_code, a.error, a.duration_ms, a.instance FROM d, a
   ), run AS (
     UPDATE webhooks w SET failing_since = CASE WHEN a.ok THEN NULL ELSE a.at END
     FROM d, a
     WHERE w.id = d.webhook_id AND (CASE WHEN a.ok THEN w.failing_since IS NOT NULL ELSE w.failing_since IS NULL AND w.enabled END)
     RETURNING w.failing_since
   )
   SELECT d.status, CASE WHEN a.ok THEN NULL ELSE coalesce((SELECT failing_since FROM run), w.failing_since) END
            AS failing_since
   FROM d JOIN webhooks w ON w.id = d.webhook_id, a`,
);

/** The error of a delivery past its 24 hours, never tried, when its webhook is disabled for failing. */
const EXPIRED_WHILE_FAILING = 'expired: the webhook was disabled for failing';

const DISABLE_FAILING = fixedStatement(
  `WITH disabled AS (
     UPDATE webhooks SET enabled = false, disabled_reason = 'failing', updated_at = ?::timestamptz
     WHERE id = ?::text AND enabled AND failing_since < ?::timestamptz
     RETURNING id, name, failing_since
   ), expired AS (
     UPDATE webhook_deliveries d
     SET status = 'failed', next_attempt_at = NULL, last_error = coalesce(d.last_error, ?::text)
     FROM disabled
     WHERE d.webhook_id = disabled.id AND d.status = 'pending' AND d.created_at <= ?::timestamptz
     RETURNING 1
   )
   SELECT id, name, failing_since, (SELECT count(*) FROM expired)::int AS expired FROM disabled`,
);

export interface DeliveryInsert {
  eventId: string;
  event: string;
  sequence: number;
  payload: string;
  /** When an aggregated row's delivery is due (its minute closed); undefined: at once. */
  dueAt?: Date;
}

/** Where the fan-out's cursor stands: after this event, and the last sequence number given. */
export interface FanoutCursor {
  tx: string;
  eventId: string;
  sequence: number;
}

/** An event read by the fan-out, with the sequence number it gets and the cursor it was read after. */
export interface SequencedEventRow extends AuditEventRow {
  /** Whether the row aggregates attempts (its `attempts` may still grow). */
  aggregated: boolean;
  sequence: string;
  after_tx: string;
  after_event_id: string;
  after_sequence: string;
}

export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  payload: string;
  /** Attempts made before this one. */
  attempts: number;
  createdAt: Date;
  url: string;
  secretSealed: string;
  /** The rotated-out secret while it is still valid, else null. */
  previousSecretSealed: string | null;
}

export interface AttemptOutcome {
  ok: boolean;
  at: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** When to try again after a failure (ignored on success or past the window). */
  nextAttemptAt: Date;
}

interface ClaimRow {
  id: string;
  webhook_id: string;
  payload: string;
  attempts: number;
  created_at: Date;
  url: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
}

/** The webhook outbox (migrations/023_webhooks.ts): fan-out, claims with a lease, acknowledgements. */
export const webhookOutboxRepository = {
  /** Whether the fan-out's cursor is at or beyond this cluster's transaction counter (a restore). */
  async dispatchAheadOfThisCluster(db: Db): Promise<boolean> {
    const { rows } = await db.raw(
      'SELECT EXISTS (SELECT 1 FROM webhook_dispatch WHERE last_tx >= pg_current_xact_id()) AS ahead',
    );
    return (rows[0] as { ahead: boolean }).ahead;
  },

  /** The cursor's transaction id set to 0, as the trail's own (`auditEventsRepository.renumberTransactions`). */
  async rewindDispatchTransaction(db: Db): Promise<void> {
    await db('webhook_dispatch').update({ last_tx: db.raw("'0'::xid8") });
  },

  /** Up to `limit` settled events after the fan-out's cursor, numbered. */
  async nextEvents(db: Db, limit: number): Promise<SequencedEventRow[]> {
    return runFixed<SequencedEventRow>(db, NEXT_EVENTS, [limit]);
  },

  /**
   * The deliveries of `events` to every webhook subscribed to them, and the cursor moved from
   * `from` to `to`; nothing when the cursor is no longer at `from`. Answers the deliveries made,
   * and whether this call moved the cursor.
   */
  async insertDeliveries(
    db: Db,
    events: DeliveryInsert[],
    from: FanoutCursor,
    to: FanoutCursor,
    now: Date,
  ): Promise<{ deliveries: number; moved: boolean }> {
    const rows = events.map((e) => ({
      id: e.eventId,
      event: e.event,
      sequence: e.sequence,
      payload: e.payload,
      due_at: e.dueAt?.toISOString() ?? null,
    }));
    const [row] = await runFixed<{ deliveries: number; moved: number }>(db, INSERT_DELIVERIES, [
      from.tx,
      from.eventId,
      from.sequence,
      JSON.stringify(rows),
      now,
      now,
      to.tx,
      to.eventId,
      to.sequence,
    ]);
    return { deliveries: row?.deliveries ?? 0, moved: row?.moved === 1 };
  },

  /**
   * Claims up to `limit` due deliveries of enabled webhooks for `instance` until `leaseMs` from
   * now (database clock): at most one per webhook, and none of a webhook with one in flight.
   */
  async claimDue(
    db: Db,
    o: { instance: string; leaseMs: number; now: Date; limit: number },
  ): Promise<ClaimedDelivery[]> {
    const rows = await runFixed<ClaimRow>(db, CLAIM_DUE, [
      o.now,
      o.limit,
      o.instance,
      `${o.leaseMs} milliseconds`,
      o.now,
    ]);
    return rows.map((r) => ({
      id: r.id,
      webhookId: r.webhook_id,
      payload: r.payload,
      attempts: r.attempts,
      createdAt: new Date(r.created_at),
      url: r.url,
      secretSealed: r.secret_sealed,
      previousSecretSealed: r.previous_secret_sealed,
    }));
  },

  /**
   * Records an attempt of a delivery `instance` claimed; a failed one created at or before
   * `cutoff` has failed for good. Undefined when the claim was lost (its lease expired and
   * another instance took the delivery over, or the webhook was deleted): nothing is written then.
   */
  async acknowledge(
    db: Db,
    deliveryId: string,
    instance: string,
    outcome: AttemptOutcome,
    cutoff: Date,
  ): Promise<{ status: string; failingSince: Date | null } | undefined> {
    const [row] = await runFixed<{ status: string; failing_since: Date | null }>(db, ACKNOWLEDGE, [
      deliveryId,
      instance,
      outcome.ok,
      outcome.at,
      outcome.statusCode,
      outcome.error,
      Math.round(outcome.durationMs),
      outcome.nextAttemptAt,
      cutoff,
    ]);
    if (!row) return undefined;
    return {
      status: row.status,
      failingSince: row.failing_since === null ? null : new Date(row.failing_since),
    };
  },

  /**
   * Disables `webhookId` for failing when its run of failures began before `failingBefore` and it
   * is still enabled, and fails at once its pending deliveries created at or before
   * `windowCutoff` (their 24 hours are over: enabling the webhook again would expire them), so
   * that what became of them does not depend on which was tried last. Answers the webhook
   * disabled, if this call did.
   */
  async disableFailing(
    db: Db,
    webhookId: string,
    failingBefore: Date,
    windowCutoff: Date,
    now: Date,
  ): Promise<{ id: string; name: string; failingSince: Date } | undefined> {
    const [row] = await runFixed<{ id: string; name: string; failing_since: Date }>(db, DISABLE_FAILING, [
      now,
      webhookId,
      failingBefore,
      EXPIRED_WHILE_FAILING,
      windowCutoff,
    ]);
    return row && { id: row.id, name: row.name, failingSince: new Date(row.failing_since) };
  },
};
