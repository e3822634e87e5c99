import type { Db } from '../db/create-database.js';

export interface SigningKey {
  kid: string;
  alg: string;
  /** The private JWK, sealed with the master key. */
  privateJwkEnc: string;
  publicJwk: Record<string, unknown>;
  createdAt: Date;
  signsFrom: Date;
  retiredAt: Date | null;
}

interface SigningKeyRow {
  kid: string;
  alg: string;
  private_jwk_enc: string;
  public_jwk: Record<string, unknown> | string;
  created_at: Date;
  signs_from: Date;
  retired_at: Date | null;
}

const toKey = (r: SigningKeyRow): SigningKey => ({
  kid: r.kid,
  alg: r.alg,
  privateJwkEnc: r.private_jwk_enc,
  publicJwk: typeof r.public_jwk === 'string' ? JSON.parse(r.public_jwk) : r.public_jwk,
  createdAt: r.created_at,
  signsFrom: r.signs_from,
  retiredAt: r.retired_at,
});

/** Arbitrary constant naming the advisory lock that serialises key creation across instances. */
const KEYS_LOCK = 0x73766b31; // 'svk1'

export const signingKeysRepository = {
  /** Newest first. */
  async list(db: Db): Promise<SigningKey[]> {
    const rows = await db<SigningKeyRow>('signing_keys').orderBy('signs_from', 'desc').orderBy('kid');
    return rows.map(toKey);
  },

  /**
   * Holds until the surrounding transaction ends: the first key is created once, by one instance,
   * and concurrent rotations publish one key.
   */
  async lock(trx: Db): Promise<void> {
    await trx.raw('SELECT pg_advisory_xact_lock(?)', [KEYS_LOCK]);
  },

  async insert(db: Db, key: Omit<SigningKey, 'createdAt'>): Promise<void> {
    await db('signing_keys').insert({
      kid: key.kid,
      alg: key.alg,
      private_jwk_enc: key.privateJwkEnc,
      public_jwk: JSON.stringify(key.publicJwk),
      signs_from: key.signsFrom,
      retired_at: key.retiredAt,
    });
  },

  /** Every key still without an end stops signing at `at` (when its successor starts). */
  async retireUnretired(db: Db, at: Date): Promise<void> {
    await db('signing_keys').whereNull('retired_at').update({ retired_at: at });
  },

  /** Every key: a restore's tokens must stop verifying (`replaceSigningKeys`). */
  async deleteAll(db: Db): Promise<number> {
    const { rows } = await db.raw('DELETE FROM signing_keys RETURNING kid');
    return rows.length;
  },

  /** Keys retired before `before`: every token they signed has expired. */
  async deleteRetiredBefore(db: Db, before: Date): Promise<number> {
    return db('signing_keys').where('retired_at', '<', before).delete();
  },
};
