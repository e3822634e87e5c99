import type { Knex } from 'knex';
import { webhookOutboxRepository } from '../../repositories/webhook-outbox-repository.js';
import { auditEventView } from '../audit-event-view.js';

/** Events per fan-out step. */
const FANOUT_BATCH = 500;
/** Steps per pass: a backlog is worked through in steps, and a pass still ends. */
const MAX_STEPS = 20;

/** After its minute, how long an aggregated row waits for attempts committed late. */
const AGGREGATE_SETTLE_MS = 5_000;

/**
 * When an aggregated row (failed logins or second factors of one minute) is complete: its minute
 * has closed. Its delivery is due then, so that it is sent once, with every attempt counted.
 */
export const minuteClosed = (occurredAt: Date): Date =>
  new Date(Math.floor(occurredAt.getTime() / 60_000) * 60_000 + 60_000 + AGGREGATE_SETTLE_MS);

export interface WebhookFanout {
  /** Moves the cursor over the settled events (bounded per call); answers the deliveries made. */
  run(): Promise<number>;
}

/**
 * The fan-out (docs/adr/0015-audit-events-and-webhooks.md): the events after the cursor, in
 * `(tx, id)` order, each numbered with the deployment's next `sequence` whether anyone subscribes
 * to it or not, become one delivery per subscribed webhook in the statement that moves the
 * cursor; an aggregated row, seen again each time its `attempts` grows, stays one delivery per
 * webhook, due once its minute has closed. A step is two statements and no transaction: the events are read with no lock, and
 * written only if the cursor has not moved since (the write locks its row). Instances that read
 * the same events write them once; the others find the cursor moved and write nothing.
 */
export function createWebhookFanout({
  knex,
  now,
  batch = FANOUT_BATCH,
}: {
  knex: Knex;
  now: () => Date;
  batch?: number;
}): WebhookFanout {
  /** One step: the events it read, the deliveries it made, and whether it moved the cursor. */
  async function step() {
    const rows = await webhookOutboxRepository.nextEvents(knex, batch);
    const [first, last] = [rows[0], rows.at(-1)];
    if (!first || !last) return { events: 0, deliveries: 0, moved: false };
    const events = rows.map(
      ({ sequence, aggregated, after_tx: _t, after_event_id: _e, after_sequence: _s, ...row }) => {
        const n = Number(sequence);
        const data = auditEventView(row);
        return {
          eventId: row.id,
          event: row.event,
          sequence: n,
          payload: JSON.stringify({ type: row.event, timestamp: data.occurredAt, sequence: n, data }),
          ...(aggregated && { dueAt: minuteClosed(new Date(row.occurred_at)) }),
        };
      },
    );
    const written = await webhookOutboxRepository.insertDeliveries(
      knex,
      events,
      { tx: first.after_tx, eventId: first.after_event_id, sequence: Number(first.after_sequence) },
      { tx: last.tx, eventId: last.id, sequence: Number(last.sequence) },
      now(),
    );
    return { events: rows.length, ...written };
  }

  return {
    async run() {
      let total = 0;
      for (let i = 0; i < MAX_STEPS; i++) {
        const { events, deliveries, moved } = await step();
        total += deliveries;
        if (!moved || events < batch) break;
      }
      return total;
    },
  };
}
