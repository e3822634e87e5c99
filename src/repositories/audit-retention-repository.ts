import type { Db } from '../db/create-database.js';

/**
 * The janitor's deletes of the stored audit trail (migrations/022_audit_events.ts) and of webhook
 * deliveries (migrations/023_webhooks.ts), one batch per statement, each on an index: `occurred_at`
 * and `created_at`. A delivery's attempts go with it (ON DELETE CASCADE).
 */
export const auditRetentionRepository = {
  /**
   * Events that occurred before `before`. An aggregated row (failed logins of one minute) goes by
   * its first attempt, `occurred_at`: its last is within the same minute, and only `occurred_at`
   * has an index.
   */
  async deleteEventsBefore(db: Db, before: Date, limit: number): Promise<number> {
    const { rows } = await db.raw(
      `DELETE FROM audit_events WHERE id IN
         (SELECT id FROM audit_events WHERE occurred_at < ? LIMIT ?) RETURNING id`,
      [before, limit],
    );
    return rows.length;
  },

  /** Deliveries created before `before`, whatever their state, with their attempts. */
  async deleteDeliveriesBefore(db: Db, before: Date, limit: number): Promise<number> {
    const { rows } = await db.raw(
      `DELETE FROM webhook_deliveries WHERE id IN
         (SELECT id FROM webhook_deliveries WHERE created_at < ? LIMIT ?) RETURNING id`,
      [before, limit],
    );
    return rows.length;
  },
};
