import type { Db } from '../db/create-database.js';

export type ChallengePurpose = 'registration' | 'second-factor' | 'passwordless';

/** A WebAuthn ceremony's challenge, waiting for its response. */
export interface WebauthnChallenge {
  challenge: string;
  purpose: ChallengePurpose;
  identityId: string | null;
  boundTo: string;
  rpId: string;
  expiresAt: Date;
}

interface ChallengeRow {
  challenge: string;
  purpose: ChallengePurpose;
  identity_id: string | null;
  bound_to: string;
  rp_id: string;
  expires_at: Date;
}

const COLUMNS = [
  'challenge',
  'purpose',
  'identity_id',
  'bound_to',
  'rp_id',
  'expires_at',
] as const satisfies readonly (keyof ChallengeRow)[];

export const webauthnChallengesRepository = {
  async insert(db: Db, c: WebauthnChallenge): Promise<void> {
    await db('webauthn_challenges').insert({
      challenge: c.challenge,
      purpose: c.purpose,
      identity_id: c.identityId,
      bound_to: c.boundTo,
      rp_id: c.rpId,
      expires_at: c.expiresAt,
    });
  },

  /**
   * Takes the challenge if it is still valid for this purpose and ceremony: one conditional
   * DELETE, so two responses to one challenge, on any instances, cannot both have it.
   */
  async consume(
    db: Db,
    key: { challenge: string; purpose: ChallengePurpose; boundTo: string },
    now: Date,
  ): Promise<WebauthnChallenge | undefined> {
    const [row] = (await db('webauthn_challenges')
      .where({ challenge: key.challenge, purpose: key.purpose, bound_to: key.boundTo })
      .andWhere('expires_at', '>', now)
      .delete()
      .returning(COLUMNS)) as ChallengeRow[];
    if (!row) return undefined;
    return {
      challenge: row.challenge,
      purpose: row.purpose,
      identityId: row.identity_id,
      boundTo: row.bound_to,
      rpId: row.rp_id,
      expiresAt: row.expires_at,
    };
  },

  /** Up to `limit` expired challenges (the janitor). */
  async deleteExpired(db: Db, now: Date, limit: number): Promise<number> {
    // `returning`: knex-pglite answers a bare delete with a result object, not a row count.
    const rows = await db('webauthn_challenges')
      .whereIn(
        'challenge',
        db('webauthn_challenges').where('expires_at', '<=', now).select('challenge').limit(limit),
      )
      .delete()
      .returning('challenge');
    return rows.length;
  },
};
