import type { Db } from '../db/create-database.js';
import { applyListQuery, type FilterClause } from '../db/list-query.js';

/**
 * The management side of `webhook_deliveries` (migrations/023_webhooks.ts): a webhook's
 * deliveries with their attempts, newest first, and an admin's writes to them (a retry, and what
 * re-enabling a webhook does to its pending deliveries). Claiming, sending and acknowledging
 * deliveries is the delivery engine's, in its own repository.
 */

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface DeliveryAttempt {
  attemptedAt: Date;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export interface Delivery {
  id: string;
  event: string;
  sequence: number;
  status: DeliveryStatus;
  attempts: number;
  createdAt: Date;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  succeededAt: Date | null;
  /** The latest `MAX_HISTORY` attempts, oldest first. */
  history: DeliveryAttempt[];
}

/** A page: at most `limit` deliveries with a sequence below `before`, matching `filter`. */
export interface DeliveryPageQuery {
  limit: number;
  before?: string;
  filter: FilterClause[];
}

export interface DeliveryPage {
  items: Delivery[];
  /** The `before` of the next page; undefined on the last. */
  next?: string;
}

/** Attempts shown per delivery: a delivery retried by hand again and again stays one row's worth. */
export const MAX_HISTORY = 50;

/** Why re-enabling a webhook failed a delivery that waited too long. */
export const EXPIRED_WHILE_DISABLED = 'expired while the webhook was disabled';

interface DeliveryRow {
  id: string;
  event: string;
  sequence: string;
  status: DeliveryStatus;
  attempts: number;
  created_at: Date;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  succeeded_at: Date | null;
}

interface AttemptRow {
  delivery_id: string;
  attempted_at: Date;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

/** `sequence` as text: it is 64-bit and the drivers disagree on how to return it. */
const columns = (db: Db) => [
  'id',
  'event',
  db.raw('sequence::text AS sequence'),
  'status',
  'attempts',
  'created_at',
  'next_attempt_at',
  'last_attempt_at',
  'last_status_code',
  'last_error',
  'succeeded_at',
];

const toDelivery = (r: DeliveryRow, history: DeliveryAttempt[]): Delivery => ({
  id: r.id,
  event: r.event,
  sequence: Number(r.sequence),
  status: r.status,
  attempts: r.attempts,
  createdAt: r.created_at,
  nextAttemptAt: r.next_attempt_at,
  lastAttemptAt: r.last_attempt_at,
  lastStatusCode: r.last_status_code,
  lastError: r.last_error,
  succeededAt: r.succeeded_at,
  history,
});

/** The latest attempts of each delivery, oldest first, in one statement. */
async function historyOf(db: Db, deliveryIds: string[]): Promise<Map<string, DeliveryAttempt[]>> {
  const found = new Map<string, DeliveryAttempt[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return found;
  const ranked = db('webhook_delivery_attempts')
    .select(
      'delivery_id',
      'attempted_at',
      'status_code',
      'error',
      'duration_ms',
      'id',
      db.raw('row_number() OVER (PARTITION BY delivery_id ORDER BY attempted_at DESC, id DESC) AS n'),
    )
    .whereIn('delivery_id', deliveryIds)
    .as('ranked');
  const rows = (await db
    .select('delivery_id', 'attempted_at', 'status_code', 'error', 'duration_ms')
    .from(ranked)
    .where('n', '<=', MAX_HISTORY)
    .orderBy([{ column: 'delivery_id' }, { column: 'attempted_at' }, { column: 'id' }])) as AttemptRow[];
  for (const r of rows) {
    found.get(r.delivery_id)?.push({
      attemptedAt: r.attempted_at,
      statusCode: r.status_code,
      error: r.error,
      durationMs: r.duration_ms,
    });
  }
  return found;
}

async function withHistory(db: Db, rows: DeliveryRow[]): Promise<Delivery[]> {
  const history = await historyOf(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => toDelivery(r, history.get(r.id) ?? []));
}

export const webhookDeliveryListRepository = {
  /** Newest first (by sequence, which the fan-out gives in commit order). */
  async page(db: Db, webhookId: string, q: DeliveryPageQuery): Promise<DeliveryPage> {
    const base = db('webhook_deliveries').select(columns(db)).where({ webhook_id: webhookId });
    if (q.before !== undefined) base.whereRaw('sequence < cast(? as bigint)', [q.before]);
    // One more than asked for: whether a next page exists, without a count over the table.
    const { page } = applyListQuery(base, { limit: q.limit + 1, offset: 0, sort: [], filter: q.filter });
    const rows = (await page.orderBy('sequence', 'desc')) as DeliveryRow[];
    const items = await withHistory(db, rows.slice(0, q.limit));
    const last = items.at(-1);
    return rows.length > q.limit && last ? { items, next: String(last.sequence) } : { items };
  },

  async find(db: Db, webhookId: string, deliveryId: string): Promise<Delivery | undefined> {
    const row = (await db('webhook_deliveries')
      .where({ id: deliveryId, webhook_id: webhookId })
      .first(columns(db))) as DeliveryRow | undefined;
    return row && (await withHistory(db, [row]))[0];
  },

  /**
   * A pending or failed delivery made due at `now`, in one statement; undefined when there is no
   * such delivery (unknown, or already succeeded). Its attempt count and a lease held by an
   * instance sending it stay as they are.
   */
  async retry(db: Db, webhookId: string, deliveryId: string, now: Date): Promise<Delivery | undefined> {
    const [row] = (await db('webhook_deliveries')
      .where({ id: deliveryId, webhook_id: webhookId })
      .whereIn('status', ['pending', 'failed'])
      .update({ status: 'pending', next_attempt_at: now })
      .returning(columns(db))) as DeliveryRow[];
    return row && (await withHistory(db, [row]))[0];
  },

  /**
   * For a webhook being enabled again: its pending deliveries created before `cutoff` fail (they
   * waited too long to be of use), the others become due at `now`. Returns how many of each. One
   * statement over the webhook's pending rows (its due index): no more than it had pending when
   * it was disabled, since a disabled webhook gets no new deliveries.
   */
  async resume(
    db: Db,
    webhookId: string,
    now: Date,
    cutoff: Date,
  ): Promise<{ resumed: number; expired: number }> {
    const rows = (await db('webhook_deliveries')
      .where({ webhook_id: webhookId, status: 'pending' })
      .update({
        status: db.raw(`CASE WHEN created_at < ?::timestamptz THEN 'failed' ELSE 'pending' END`, [cutoff]),
        next_attempt_at: db.raw(`CASE WHEN created_at < ?::timestamptz THEN NULL ELSE ?::timestamptz END`, [
          cutoff,
          now,
        ]),
        last_error: db.raw(`CASE WHEN created_at < ?::timestamptz THEN ? ELSE last_error END`, [
          cutoff,
          EXPIRED_WHILE_DISABLED,
        ]),
      })
      .returning('status')) as { status: string }[];
    const expired = rows.filter((r) => r.status === 'failed').length;
    return { resumed: rows.length - expired, expired };
  },
};
