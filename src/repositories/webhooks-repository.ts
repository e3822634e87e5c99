import type { Db } from '../db/create-database.js';
import { mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';

/**
 * A webhook as the management side reads it (migrations/023_webhooks.ts). The sealed secrets are
 * written here but never read back: nothing the management API answers may hold them, and the
 * delivery engine reads them with its own statement.
 */
export interface Webhook {
  id: string;
  name: string;
  url: string;
  events: string[];
  enabled: boolean;
  previousSecretExpiresAt: Date | null;
  failingSince: Date | null;
  disabledReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface WebhookInsert {
  id: string;
  name: string;
  url: string;
  events: string[];
  enabled: boolean;
  /** `whsec_…` sealed with the master key (SecretBox). */
  secretSealed: string;
}

/** What an update may set; clearing the failure state goes with enabling or disabling. */
export interface WebhookChanges {
  name?: string;
  url?: string;
  events?: string[];
  enabled?: boolean;
  failingSince?: null;
  disabledReason?: null;
}

interface WebhookRow {
  id: string;
  name: string;
  url: string;
  events: string[];
  enabled: boolean;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

/** Every column but the sealed secrets. */
const COLUMNS = [
  'id',
  'name',
  'url',
  'events',
  'enabled',
  'previous_secret_expires_at',
  'failing_since',
  'disabled_reason',
  'created_at',
  'updated_at',
];

const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  name: r.name,
  url: r.url,
  events: r.events ?? [],
  enabled: r.enabled,
  previousSecretExpiresAt: r.previous_secret_expires_at,
  failingSince: r.failing_since,
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const COLUMN_OF: Record<keyof WebhookChanges, string> = {
  name: 'name',
  url: 'url',
  events: 'events',
  enabled: 'enabled',
  failingSince: 'failing_since',
  disabledReason: 'disabled_reason',
};

function changedColumns(changes: WebhookChanges): Record<string, unknown> {
  const set: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(changes) as [keyof WebhookChanges, unknown][]) {
    if (value === undefined) continue;
    set[COLUMN_OF[key]] = key === 'events' ? JSON.stringify(value) : value;
  }
  return set;
}

export const webhooksRepository = {
  async insert(db: Db, w: WebhookInsert, now: Date): Promise<Webhook> {
    const [row] = await db('webhooks')
      .insert({
        id: w.id,
        name: w.name,
        url: w.url,
        events: JSON.stringify(w.events),
        enabled: w.enabled,
        secret_sealed: w.secretSealed,
        created_at: now,
        updated_at: now,
      })
      .returning(COLUMNS);
    return toWebhook(row as WebhookRow);
  },

  async findById(db: Db, id: string): Promise<Webhook | undefined> {
    const row = (await db('webhooks').where({ id }).first(COLUMNS)) as WebhookRow | undefined;
    return row && toWebhook(row);
  },

  /** The row locked for the rest of the transaction (read-modify-write without lost updates). */
  async findForUpdate(db: Db, id: string): Promise<Webhook | undefined> {
    const row = (await db('webhooks').where({ id }).forUpdate().first(COLUMNS)) as WebhookRow | undefined;
    return row && toWebhook(row);
  },

  async list(db: Db, q: ListQuery): Promise<ListPage<Webhook>> {
    const page = await runListQuery<WebhookRow>(db('webhooks').select(COLUMNS), q, 'id');
    return mapPage(page, (rows) => rows.map(toWebhook));
  },

  async update(db: Db, id: string, changes: WebhookChanges, now: Date): Promise<Webhook | undefined> {
    const [row] = await db('webhooks')
      .where({ id })
      .update({ ...changedColumns(changes), updated_at: now })
      .returning(COLUMNS);
    return row && toWebhook(row as WebhookRow);
  },

  /**
   * One statement: the current secret becomes the previous one (valid until
   * `previousExpiresAt`), `sealed` the current one. A previous secret still valid from an
   * earlier rotation is dropped.
   */
  async rotateSecret(
    db: Db,
    id: string,
    sealed: string,
    previousExpiresAt: Date,
    now: Date,
  ): Promise<Webhook | undefined> {
    const [row] = await db('webhooks')
      .where({ id })
      .update({
        // The right-hand side of SET reads the row as it was: the secret before this rotation.
        previous_secret_sealed: db.ref('secret_sealed'),
        secret_sealed: sealed,
        previous_secret_expires_at: previousExpiresAt,
        updated_at: now,
      })
      .returning(COLUMNS);
    return row && toWebhook(row as WebhookRow);
  },

  async delete(db: Db, id: string): Promise<Webhook | undefined> {
    // `returning`: knex-pglite answers a bare delete with a result object, not a row count.
    const [row] = await db('webhooks').where({ id }).delete().returning(COLUMNS);
    return row && toWebhook(row as WebhookRow);
  },
};
