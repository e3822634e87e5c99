import type { Db } from '../db/create-database.js';

/** Hashed one-time recovery codes. */
export const mfaRecoveryCodesRepository = {
  /** Replaces every code of the identity; call inside the caller's transaction. */
  async replace(db: Db, identityId: string, codeHashes: string[]): Promise<void> {
    await db('mfa_recovery_codes').where({ identity_id: identityId }).delete();
    if (codeHashes.length === 0) return;
    await db('mfa_recovery_codes').insert(
      codeHashes.map((code_hash) => ({ identity_id: identityId, code_hash })),
    );
  },

  /** Uses one code: one atomic statement, so two parallel uses cannot both succeed. */
  async consume(db: Db, identityId: string, codeHash: string, now: Date): Promise<boolean> {
    const rows = await db('mfa_recovery_codes')
      .where({ identity_id: identityId, code_hash: codeHash })
      .whereNull('used_at')
      .update({ used_at: now })
      .returning('code_hash');
    return rows.length === 1;
  },

  async countUnused(db: Db, identityId: string): Promise<number> {
    const [row] = await db('mfa_recovery_codes')
      .where({ identity_id: identityId })
      .whereNull('used_at')
      .count<{ count: string | number }[]>({ count: '*' });
    return Number(row?.count ?? 0);
  },

  async deleteAll(db: Db, identityId: string): Promise<void> {
    await db('mfa_recovery_codes').where({ identity_id: identityId }).delete();
  },
};
