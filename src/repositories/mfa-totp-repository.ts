import type { Db } from '../db/create-database.js';
import { runFixed } from '../db/fixed-statement.js';
import { fixedSelectFirst } from './fixed-select.js';

/** One identity's TOTP configuration; the secret stays sealed here. */
export interface TotpConfig {
  identityId: string;
  secretEnc: string;
  isVerified: boolean;
  /** The last accepted RFC 6238 time step: only a later one is accepted. */
  lastUsedStep: number;
  createdAt: Date;
  verifiedAt: Date | null;
  /** The API session that started the enrollment; null when an OIDC login did. */
  startedBySession: string | null;
}

interface TotpRow {
  identity_id: string;
  secret_enc: string;
  is_verified: boolean;
  last_used_step: string | number;
  created_at: Date;
  verified_at: Date | null;
  started_by_session: string | null;
}

/** Every column, named (see IDENTITY_COLUMNS). */
const TOTP_COLUMNS = [
  'identity_id',
  'secret_enc',
  'is_verified',
  'last_used_step',
  'created_at',
  'verified_at',
  'started_by_session',
] as const satisfies readonly (keyof TotpRow)[];
const FIND = fixedSelectFirst('mfa_totp', TOTP_COLUMNS, ['identity_id']);

const toConfig = (r: TotpRow): TotpConfig => ({
  identityId: r.identity_id,
  secretEnc: r.secret_enc,
  isVerified: r.is_verified,
  // bigint columns come back as strings from pg; steps (~6e7) are exact in a double.
  lastUsedStep: Number(r.last_used_step),
  createdAt: r.created_at,
  verifiedAt: r.verified_at,
  startedBySession: r.started_by_session ?? null,
});

export const mfaTotpRepository = {
  /** Which of these identities have a verified TOTP configuration (`isMfaEnabled`). */
  async verifiedAmong(db: Db, identityIds: string[]): Promise<Set<string>> {
    if (identityIds.length === 0) return new Set();
    const rows = await db('mfa_totp')
      .whereIn('identity_id', identityIds)
      .andWhere({ is_verified: true })
      .select('identity_id');
    return new Set(rows.map((r: { identity_id: string }) => r.identity_id));
  },

  async find(db: Db, identityId: string): Promise<TotpConfig | undefined> {
    const [row] = await runFixed<TotpRow>(db, FIND, [identityId]);
    return row && toConfig(row);
  },

  /** Inserts an unverified configuration unless one exists (in progress or verified): one statement. */
  async insertIfAbsent(
    db: Db,
    identityId: string,
    secretEnc: string,
    startedBySession: string | null = null,
  ): Promise<TotpConfig | undefined> {
    const [row] = await db('mfa_totp')
      .insert({
        identity_id: identityId,
        secret_enc: secretEnc,
        is_verified: false,
        started_by_session: startedBySession,
      })
      .onConflict('identity_id')
      .ignore()
      .returning('*');
    return row && toConfig(row);
  },

  /**
   * Marks an unverified configuration verified, consuming `step` (atomic, no replay). `secretEnc`,
   * when given, names the enrollment: a replaced one is not verified instead.
   */
  async markVerified(
    db: Db,
    identityId: string,
    step: number,
    now: Date,
    secretEnc?: string,
  ): Promise<TotpConfig | undefined> {
    const [row] = await db('mfa_totp')
      .where({ identity_id: identityId, is_verified: false, ...(secretEnc ? { secret_enc: secretEnc } : {}) })
      .andWhere('last_used_step', '<', step)
      .update({ is_verified: true, verified_at: now, last_used_step: step })
      .returning('*');
    return row && toConfig(row);
  },

  /** Accepts `step` for a verified configuration only if it is later than the last one (atomic). */
  async consumeStep(db: Db, identityId: string, step: number): Promise<boolean> {
    const rows = await db('mfa_totp')
      .where({ identity_id: identityId, is_verified: true })
      .andWhere('last_used_step', '<', step)
      .update({ last_used_step: step })
      .returning('identity_id');
    return rows.length === 1;
  },

  async deleteUnverified(db: Db, identityId: string, secretEnc?: string): Promise<boolean> {
    const rows = await db('mfa_totp')
      .where({ identity_id: identityId, is_verified: false, ...(secretEnc ? { secret_enc: secretEnc } : {}) })
      .delete()
      .returning('identity_id');
    return rows.length === 1;
  },

  async delete(db: Db, identityId: string): Promise<boolean> {
    const rows = await db('mfa_totp').where({ identity_id: identityId }).delete().returning('identity_id');
    return rows.length === 1;
  },
};
