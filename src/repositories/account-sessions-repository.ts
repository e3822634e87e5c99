import type { Db } from '../db/create-database.js';

/** A sign-in of the account page in flight: what its callback needs, sealed. */
export interface AccountLoginRow {
  issuerAddress: string;
  loginSealed: string;
}

/** A signed-in account page session. */
export interface AccountSessionRow {
  idHash: string;
  identityId: string;
  apiSessionId: string;
  issuerAddress: string;
  tokensSealed: string;
  tokensVersion: number;
  accessExpiresAt: Date;
  csrfSealed: string;
  authTime: Date | null;
  expiresAt: Date;
}

interface Row {
  id_hash: string;
  identity_id: string;
  api_session_id: string;
  issuer_address: string;
  tokens_sealed: string;
  tokens_version: number;
  access_expires_at: Date | string;
  csrf_sealed: string;
  auth_time: Date | string | null;
  expires_at: Date | string;
}

const TABLE = 'account_sessions';

const toSession = (r: Row): AccountSessionRow => ({
  idHash: r.id_hash,
  identityId: r.identity_id,
  apiSessionId: r.api_session_id,
  issuerAddress: r.issuer_address,
  tokensSealed: r.tokens_sealed,
  tokensVersion: Number(r.tokens_version),
  accessExpiresAt: new Date(r.access_expires_at),
  csrfSealed: r.csrf_sealed,
  authTime: r.auth_time === null ? null : new Date(r.auth_time),
  expiresAt: new Date(r.expires_at),
});

/** `account_sessions`: the account page's sign-ins in flight and its sessions (migration 021). */
export const accountSessionsRepository = {
  async insertLogin(
    db: Db,
    row: { idHash: string; issuerAddress: string; loginSealed: string; now: Date; expiresAt: Date },
  ): Promise<void> {
    await db(TABLE).insert({
      id_hash: row.idHash,
      kind: 'login',
      issuer_address: row.issuerAddress,
      login_sealed: row.loginSealed,
      created_at: row.now,
      expires_at: row.expiresAt,
    });
  },

  /** Consumes a sign-in in flight: one statement, so a callback is honoured once, on any instance. */
  async consumeLogin(db: Db, idHash: string, now: Date): Promise<AccountLoginRow | undefined> {
    const { rows } = await db.raw(
      `DELETE FROM account_sessions WHERE id_hash = ? AND kind = 'login' AND expires_at > ?
       RETURNING issuer_address, login_sealed`,
      [idHash, now],
    );
    const r = rows[0] as { issuer_address: string; login_sealed: string } | undefined;
    return r && { issuerAddress: r.issuer_address, loginSealed: r.login_sealed };
  },

  async insertSession(db: Db, row: Omit<AccountSessionRow, 'tokensVersion'> & { now: Date }): Promise<void> {
    await db(TABLE).insert({
      id_hash: row.idHash,
      kind: 'session',
      identity_id: row.identityId,
      api_session_id: row.apiSessionId,
      issuer_address: row.issuerAddress,
      tokens_sealed: row.tokensSealed,
      tokens_version: 0,
      access_expires_at: row.accessExpiresAt,
      csrf_sealed: row.csrfSealed,
      auth_time: row.authTime,
      created_at: row.now,
      expires_at: row.expiresAt,
    });
  },

  async findSession(db: Db, idHash: string, now: Date): Promise<AccountSessionRow | undefined> {
    const row = (await db(TABLE)
      .select(
        'id_hash',
        'identity_id',
        'api_session_id',
        'issuer_address',
        'tokens_sealed',
        'tokens_version',
        'access_expires_at',
        'csrf_sealed',
        'auth_time',
        'expires_at',
      )
      .where({ id_hash: idHash, kind: 'session' })
      .andWhere('expires_at', '>', now)
      .first()) as Row | undefined;
    return row && toSession(row);
  },

  /**
   * Claims the refresh of a session's tokens at `version` for `untilMs`: only one request at a
   * time presents its refresh token (a second presentation would end the grant as a replay).
   */
  async claimRefresh(db: Db, idHash: string, version: number, now: Date, until: Date): Promise<boolean> {
    const { rows } = await db.raw(
      `UPDATE account_sessions SET refreshing_until = ?
       WHERE id_hash = ? AND kind = 'session' AND tokens_version = ?
         AND (refreshing_until IS NULL OR refreshing_until <= ?)
       RETURNING id_hash`,
      [until, idHash, version, now],
    );
    return rows.length === 1;
  },

  /** Stores the refreshed tokens and releases the claim. */
  async storeRefreshed(
    db: Db,
    idHash: string,
    version: number,
    tokensSealed: string,
    accessExpiresAt: Date,
  ): Promise<boolean> {
    const n = await db(TABLE)
      .where({ id_hash: idHash, kind: 'session', tokens_version: version })
      .update({
        tokens_sealed: tokensSealed,
        tokens_version: version + 1,
        access_expires_at: accessExpiresAt,
        refreshing_until: null,
      });
    return n === 1;
  },

  /** Deletes a session row; returns it when it existed (sign out, a refused refresh). */
  async deleteSession(
    db: Db,
    idHash: string,
  ): Promise<{ identityId: string; apiSessionId: string } | undefined> {
    const { rows } = await db.raw(
      `DELETE FROM account_sessions WHERE id_hash = ? RETURNING identity_id, api_session_id`,
      [idHash],
    );
    const r = rows[0] as { identity_id: string | null; api_session_id: string | null } | undefined;
    return r?.identity_id && r.api_session_id
      ? { identityId: r.identity_id, apiSessionId: r.api_session_id }
      : undefined;
  },

  /** Every row, sign-ins in flight included, so that no restored sign-in goes on: how many unexpired sessions there were. */
  async deleteAll(db: Db): Promise<number> {
    const { rows } = await db.raw(
      `WITH deleted AS (DELETE FROM account_sessions RETURNING kind, expires_at)
       SELECT count(*)::int AS n FROM deleted WHERE kind = 'session' AND expires_at > now()`,
    );
    return (rows[0] as { n: number }).n;
  },

  /** Expired rows (the janitor), at most `limit` per call. */
  async deleteExpired(db: Db, now: Date, limit = 1000): Promise<number> {
    const { rows } = await db.raw(
      `DELETE FROM account_sessions WHERE id_hash IN
         (SELECT id_hash FROM account_sessions WHERE expires_at <= ? LIMIT ?)
       RETURNING id_hash`,
      [now, limit],
    );
    return rows.length;
  },
};
