import type { Knex } from 'knex';
import { inTransaction } from '../../db/transaction.js';
import { webhookOutboxRepository } from '../../repositories/webhook-outbox-repository.js';
import { auditEventView } from '../audit-event-view.js';

/** Events per fan-out transaction. */
export const FANOUT_BATCH = 500;
/** Batches per pass: a backlog is worked through in steps, and a pass still ends. */
const MAX_BATCHES = 20;

export interface WebhookFanout {
  /** Moves the cursor over every settled event (bounded per call); answers the deliveries made. */
  run(): Promise<number>;
}

/**
 * The fan-out (docs/adr/0015-audit-events-and-webhooks.md): the events after the cursor, in
 * commit order, each numbered with the deployment's next `sequence` whether anyone subscribes to
 * it or not, become one delivery per subscribed webhook, in the transaction that moves the
 * cursor. One instance at a time: the others find the cursor's row locked and skip the pass.
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
  /** One batch; answers how many events it read and the deliveries it made. */
  const step = () =>
    inTransaction(knex, async (trx) => {
      const rows = await webhookOutboxRepository.lockNextEvents(trx, batch);
      const last = rows.at(-1);
      if (!last) return { events: 0, deliveries: 0 };
      const events = rows.map(({ sequence, ...row }) => {
        const n = Number(sequence);
        const data = auditEventView(row);
        return {
          eventId: row.id,
          event: row.event,
          sequence: n,
          payload: JSON.stringify({ type: row.event, timestamp: data.occurredAt, sequence: n, data }),
        };
      });
      const deliveries = await webhookOutboxRepository.insertDeliveries(
        trx,
        events,
        { tx: last.tx, eventId: last.id, sequence: Number(last.sequence) },
        now(),
      );
      return { events: rows.length, deliveries };
    });

  return {
    async run() {
      if (!(await webhookOutboxRepository.hasNewEvents(knex))) return 0;
      let total = 0;
      for (let i = 0; i < MAX_BATCHES; i++) {
        const { events, deliveries } = await step();
        total += deliveries;
        if (events < batch) break;
      }
      return total;
    },
  };
}
