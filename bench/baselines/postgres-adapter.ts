import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { errors, type Adapter, type AdapterPayload } from 'oidc-provider';

/**
 * Baseline (c)'s storage: the adapter a user of the bare library would write for PostgreSQL. One
 * table keyed by (model, id), one named prepared statement per adapter call (PostgreSQL parses
 * and plans each once per connection), indexes only for the adapter's own look-ups.
 */

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS oidc_payloads (
     model text NOT NULL,
     id text NOT NULL,
     payload jsonb NOT NULL,
     expires_at timestamptz,
     consumed_at timestamptz,
     grant_id text,
     uid text,
     user_code text,
     PRIMARY KEY (model, id))`,
  'CREATE INDEX IF NOT EXISTS oidc_payloads_grant_id ON oidc_payloads (grant_id) WHERE grant_id IS NOT NULL',
  'CREATE INDEX IF NOT EXISTS oidc_payloads_uid ON oidc_payloads (model, uid) WHERE uid IS NOT NULL',
  `CREATE TABLE IF NOT EXISTS api_sessions (
     id text PRIMARY KEY,
     account_id text NOT NULL,
     created_at timestamptz NOT NULL DEFAULT now(),
     expires_at timestamptz NOT NULL)`,
  'CREATE INDEX IF NOT EXISTS api_sessions_account_id ON api_sessions (account_id)',
];

const LIVE = '(expires_at IS NULL OR expires_at > now())';
const SQL = {
  upsert: `INSERT INTO oidc_payloads (model, id, payload, expires_at, grant_id, uid, user_code)
           VALUES ($1, $2, $3, now() + $4::int * interval '1 second', $5, $6, $7)
           ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload,
             expires_at = excluded.expires_at, grant_id = excluded.grant_id, uid = excluded.uid,
             user_code = excluded.user_code`,
  find: `SELECT payload, consumed_at FROM oidc_payloads WHERE model = $1 AND id = $2 AND ${LIVE}`,
  findByUid: `SELECT payload, consumed_at FROM oidc_payloads WHERE model = $1 AND uid = $2 AND ${LIVE}`,
  findByUserCode: `SELECT payload, consumed_at FROM oidc_payloads WHERE model = $1 AND user_code = $2 AND ${LIVE}`,
  consume:
    'UPDATE oidc_payloads SET consumed_at = now() WHERE model = $1 AND id = $2 AND consumed_at IS NULL',
  destroy: 'DELETE FROM oidc_payloads WHERE model = $1 AND id = $2',
  revokeByGrantId: 'DELETE FROM oidc_payloads WHERE grant_id = $1',
  // The service's login facts and API session, written together (all or nothing) in one statement.
  login: `WITH s AS (INSERT INTO api_sessions (id, account_id, expires_at)
                     VALUES ($1, $2, now() + $4::int * interval '1 second'))
          INSERT INTO oidc_payloads (model, id, payload, expires_at, uid)
          VALUES ('LoginFacts', $3, $5, now() + $4::int * interval '1 second', $1)`,
} as const;

type Row = { payload: AdapterPayload; consumed_at: Date | null };

export async function createBaselineSchema(pool: pg.Pool): Promise<void> {
  for (const statement of SCHEMA) await pool.query(statement);
}

function payloadOf(rows: Row[]): AdapterPayload | undefined {
  const row = rows[0];
  if (!row) return undefined;
  return row.consumed_at
    ? { ...row.payload, consumed: Math.floor(row.consumed_at.getTime() / 1000) }
    : row.payload;
}

/**
 * Per login, what the service keeps beside the provider's models: a small "login facts" row and
 * an API session row, so that (c) writes as many rows per login as the service.
 */
export async function recordLogin(pool: pg.Pool, accountId: string, ttlSeconds: number): Promise<void> {
  const apiSessionId = randomBytes(12).toString('base64url');
  const facts = { accountId, amr: ['pwd'], authTime: Math.floor(Date.now() / 1000), apiSessionId };
  await pool.query({
    name: 'login',
    text: SQL.login,
    values: [
      apiSessionId,
      accountId,
      randomBytes(12).toString('base64url'),
      ttlSeconds,
      JSON.stringify(facts),
    ],
  });
}

/**
 * The provider's `Session` is not stored: the service keeps none, so neither does (c). The provider
 * needs it only in memory within the request: the login flow carries no session cookie, and no
 * code or token expires with the session (`expiresWithSession`, bare-provider-config.ts), so
 * nothing reads it back.
 */
export function createPostgresAdapterClass(pool: pg.Pool) {
  const run = async (name: keyof typeof SQL, values: unknown[]) =>
    pool.query<Row>({ name, text: SQL[name], values });

  return class PostgresAdapter implements Adapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      if (this.model === 'Session') return;
      await run('upsert', [
        this.model,
        id,
        JSON.stringify(payload),
        expiresIn || null,
        payload.grantId ?? null,
        payload.uid ?? null,
        payload.userCode ?? null,
      ]);
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      return payloadOf((await run('find', [this.model, id])).rows);
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return payloadOf((await run('findByUid', [this.model, uid])).rows);
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return payloadOf((await run('findByUserCode', [this.model, userCode])).rows);
    }

    /** Exactly one caller consumes a code or refresh token; a concurrent second one is refused. */
    async consume(id: string): Promise<void> {
      const { rowCount } = await run('consume', [this.model, id]);
      if (rowCount !== 1) throw new errors.InvalidGrant('grant request is invalid');
    }

    async destroy(id: string): Promise<void> {
      await run('destroy', [this.model, id]);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await run('revokeByGrantId', [grantId]);
    }
  };
}
