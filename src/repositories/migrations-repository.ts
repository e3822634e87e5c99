import type { Db } from '../db/create-database.js';

/** knex's own record of the migrations it has applied, one row each, in the order applied. */
const TABLE = 'knex_migrations';

export const migrationsRepository = {
  /** The name of the migration applied last (e.g. `024_webhook_delivery_due_index`); null before any. */
  async lastApplied(db: Db): Promise<string | null> {
    const row = (await db(TABLE).select('name').orderBy('id', 'desc').first()) as
      { name: string } | undefined;
    return row?.name ?? null;
  },
};
