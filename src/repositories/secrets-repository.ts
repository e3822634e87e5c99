import type { Db } from '../db/create-database.js';

/** Named values kept in the database; callers seal secret parts with the master key first. */
export const secretsRepository = {
  async get(db: Db, name: string): Promise<string | undefined> {
    const row = await db('secrets').where({ name }).first('value');
    return row?.value;
  },

  /** As `get`, on a database that may not be migrated yet: undefined when there is no table. */
  async getIfMigrated(db: Db, name: string): Promise<string | undefined> {
    if (!(await db.schema.hasTable('secrets'))) return undefined;
    return secretsRepository.get(db, name);
  },

  /** Inserts unless present; returns the stored value (ours or the one another instance wrote first). */
  async putIfAbsent(db: Db, name: string, value: string): Promise<string> {
    await db('secrets').insert({ name, value }).onConflict('name').ignore();
    return (await secretsRepository.get(db, name))!;
  },

  async put(db: Db, name: string, value: string): Promise<void> {
    await db('secrets').insert({ name, value }).onConflict('name').merge(['value']);
  },
};
