import type { Db } from '../db/create-database.js';

/** A registered WebAuthn credential (a passkey) of one identity. */
export interface Passkey {
  id: string;
  identityId: string;
  /** base64url, as the authenticator reports it (`rawId`). */
  credentialId: string;
  /** COSE public key. */
  publicKey: Uint8Array<ArrayBuffer>;
  signCount: number;
  transports: string[];
  backedUp: boolean;
  deviceType: string;
  rpId: string;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

interface PasskeyRow {
  id: string;
  identity_id: string;
  credential_id: string;
  public_key: Buffer | Uint8Array;
  sign_count: string | number;
  transports: string[] | null;
  backed_up: boolean;
  device_type: string;
  rp_id: string;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
}

const COLUMNS = [
  'id',
  'identity_id',
  'credential_id',
  'public_key',
  'sign_count',
  'transports',
  'backed_up',
  'device_type',
  'rp_id',
  'name',
  'created_at',
  'last_used_at',
] as const satisfies readonly (keyof PasskeyRow)[];

const toPasskey = (r: PasskeyRow): Passkey => ({
  id: r.id,
  identityId: r.identity_id,
  credentialId: r.credential_id,
  publicKey: new Uint8Array(r.public_key),
  // bigint comes back as a string from pg; authenticator counters are 32-bit.
  signCount: Number(r.sign_count),
  transports: r.transports ?? [],
  backedUp: r.backed_up,
  deviceType: r.device_type,
  rpId: r.rp_id,
  name: r.name,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
});

export type NewPasskey = Omit<Passkey, 'createdAt' | 'lastUsedAt' | 'signCount'> & { signCount: number };

export const passkeysRepository = {
  async insert(db: Db, p: NewPasskey, now: Date): Promise<Passkey> {
    const [row] = await db('passkeys')
      .insert({
        id: p.id,
        identity_id: p.identityId,
        credential_id: p.credentialId,
        public_key: Buffer.from(p.publicKey),
        sign_count: p.signCount,
        transports: p.transports,
        backed_up: p.backedUp,
        device_type: p.deviceType,
        rp_id: p.rpId,
        name: p.name,
        created_at: now,
      })
      .returning(COLUMNS);
    return toPasskey(row as PasskeyRow);
  },

  /** The identity's passkeys, oldest first. */
  async listForIdentity(db: Db, identityId: string): Promise<Passkey[]> {
    const rows = await db('passkeys')
      .where({ identity_id: identityId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .select(COLUMNS);
    return (rows as PasskeyRow[]).map(toPasskey);
  },

  async findByCredentialId(db: Db, credentialId: string): Promise<Passkey | undefined> {
    const row = await db('passkeys').where({ credential_id: credentialId }).first(COLUMNS);
    return row ? toPasskey(row as PasskeyRow) : undefined;
  },

  async findById(db: Db, id: string): Promise<Passkey | undefined> {
    const row = await db('passkeys').where({ id }).first(COLUMNS);
    return row ? toPasskey(row as PasskeyRow) : undefined;
  },

  async countForIdentity(db: Db, identityId: string): Promise<number> {
    const [row] = await db('passkeys')
      .where({ identity_id: identityId })
      .count<{ count: string | number }[]>({ count: '*' });
    return Number(row?.count ?? 0);
  },

  /** Passkey counts of these identities (absent: none). */
  async countAmong(db: Db, identityIds: string[]): Promise<Map<string, number>> {
    if (identityIds.length === 0) return new Map();
    const rows = await db('passkeys')
      .whereIn('identity_id', identityIds)
      .groupBy('identity_id')
      .select('identity_id')
      .count<{ identity_id: string; count: string | number }[]>({ count: '*' });
    return new Map(rows.map((r) => [r.identity_id, Number(r.count)]));
  },

  /** Renames the identity's passkey; undefined when it has none of that id. */
  async rename(db: Db, identityId: string, id: string, name: string): Promise<Passkey | undefined> {
    const [row] = await db('passkeys')
      .where({ id, identity_id: identityId })
      .update({ name })
      .returning(COLUMNS);
    return row ? toPasskey(row as PasskeyRow) : undefined;
  },

  /** Deletes one passkey (of `identityId` when given); the deleted row, or undefined. */
  async delete(db: Db, id: string, identityId?: string): Promise<Passkey | undefined> {
    const [row] = await db('passkeys')
      .where({ id, ...(identityId === undefined ? {} : { identity_id: identityId }) })
      .delete()
      .returning(COLUMNS);
    return row ? toPasskey(row as PasskeyRow) : undefined;
  },

  async deleteAllOfIdentity(db: Db, identityId: string): Promise<number> {
    // `returning`: knex-pglite answers a bare delete with a result object, not a row count.
    const rows = await db('passkeys').where({ identity_id: identityId }).delete().returning('id');
    return rows.length;
  },

  /**
   * Records a use: the new counter and the time, in one conditional statement. The counter must
   * grow, or stay 0 for an authenticator that keeps none; a row that does not qualify is not
   * touched (a cloned authenticator, or a parallel use of the same counter value), and false is
   * returned.
   */
  async recordUse(
    db: Db,
    id: string,
    use: { signCount: number; backedUp: boolean; at: Date },
  ): Promise<boolean> {
    const rows = await db('passkeys')
      .where({ id })
      .andWhere((q) =>
        use.signCount === 0 ? q.where('sign_count', 0) : q.where('sign_count', '<', use.signCount),
      )
      .update({ sign_count: use.signCount, backed_up: use.backedUp, last_used_at: use.at })
      .returning('id');
    return rows.length === 1;
  },
};
