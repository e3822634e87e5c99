import type { Db } from '../db/create-database.js';
import { mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';
import { AUTHENTICATOR_COLUMNS, toAuthenticator, type Authenticator } from './authenticators-repository.js';

/**
 * One entry of the management list of authenticators: a password or certificate authenticator,
 * or a passkey (`method` `passkey`, with its name and last use).
 */
export type ListedAuthenticator =
  | (Authenticator & { passkeyName?: undefined; lastUsedAt?: undefined })
  | (Omit<Authenticator, 'method'> & { method: 'passkey'; passkeyName: string; lastUsedAt: Date | null });

interface ListedRow {
  id: string;
  identity_id: string;
  method: 'updb' | 'cert' | 'passkey';
  username: string | null;
  password_hash: string | null;
  cert_fingerprint: string | null;
  cert_tbs_sha256: string | null;
  cert_pem: string | null;
  ca_id: string | null;
  is_extendable: boolean;
  created_at: Date;
  updated_at: Date;
  passkey_name: string | null;
  last_used_at: Date | null;
}

function toListed(r: ListedRow): ListedAuthenticator {
  if (r.method !== 'passkey') return toAuthenticator({ ...r, method: r.method });
  return {
    ...toAuthenticator({ ...r, method: 'updb' }),
    method: 'passkey',
    passkeyName: r.passkey_name ?? '',
    lastUsedAt: r.last_used_at,
  };
}

/**
 * `GET /authenticators` reads the authenticators and the passkeys as one relation, so that
 * filters, sorting and paging apply to both alike (the columns a passkey lacks are null).
 */
function bothTables(db: Db) {
  const authenticators = db('authenticators').select(
    ...AUTHENTICATOR_COLUMNS,
    db.raw('NULL::text AS passkey_name'),
    db.raw('NULL::timestamptz AS last_used_at'),
  );
  const passkeys = db('passkeys').select(
    'id',
    'identity_id',
    db.raw("'passkey'::text AS method"),
    db.raw('NULL::text AS username'),
    db.raw('NULL::text AS password_hash'),
    db.raw('NULL::text AS cert_fingerprint'),
    db.raw('NULL::text AS cert_tbs_sha256'),
    db.raw('NULL::text AS cert_pem'),
    db.raw('NULL::text AS ca_id'),
    db.raw('false AS is_extendable'),
    'created_at',
    db.raw('coalesce(last_used_at, created_at) AS updated_at'),
    db.raw('name AS passkey_name'),
    'last_used_at',
  );
  return db.from(authenticators.unionAll(passkeys, true).as('listed')).select('*');
}

export const authenticatorListRepository = {
  async list(db: Db, q: ListQuery): Promise<ListPage<ListedAuthenticator>> {
    const page = await runListQuery<ListedRow>(bothTables(db), q, 'id');
    return mapPage(page, (rows) => rows.map(toListed));
  },
};
