import type { Db } from '../db/create-database.js';
import { mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';
import {
  AUTHENTICATOR_COLUMNS,
  type Authenticator,
  type AuthenticatorRow,
} from './authenticators-repository.js';
import type { Passkey } from './passkeys-repository.js';

/** A password or certificate authenticator as the list shows it: everything but the password hash. */
export type ListedCredential = Omit<Authenticator, 'passwordHash'> & { passkeyName?: undefined };

/** A passkey as an entry of `/authenticators`: its name and last use, none of its key material. */
export interface ListedPasskey {
  id: string;
  identityId: string;
  method: 'passkey';
  passkeyName: string;
  lastUsedAt: Date | null;
  createdAt: Date;
  /** Its last use, else its creation: what `updatedAt` sorts and filters by in the list (`bothTables`). */
  updatedAt: Date;
}

/** One entry of the management list of authenticators. */
export type ListedAuthenticator = ListedCredential | ListedPasskey;

/** A passkey as listed; `updatedAt` is the same rule as the list's SQL column (`bothTables`). */
export const toListedPasskey = (
  p: Pick<Passkey, 'id' | 'identityId' | 'name' | 'createdAt' | 'lastUsedAt'>,
): ListedPasskey => ({
  id: p.id,
  identityId: p.identityId,
  method: 'passkey',
  passkeyName: p.name,
  lastUsedAt: p.lastUsedAt,
  createdAt: p.createdAt,
  updatedAt: p.lastUsedAt ?? p.createdAt,
});

/** An authenticator's row without its password hash, or a passkey's in the same columns. */
type ListedRow = Omit<AuthenticatorRow, 'method' | 'password_hash'> & {
  method: AuthenticatorRow['method'] | 'passkey';
  passkey_name: string | null;
  last_used_at: Date | null;
};

function toListed(r: ListedRow): ListedAuthenticator {
  if (r.method === 'passkey') {
    return toListedPasskey({
      id: r.id,
      identityId: r.identity_id,
      name: r.passkey_name ?? '',
      createdAt: r.created_at,
      lastUsedAt: r.last_used_at,
    });
  }
  return {
    id: r.id,
    identityId: r.identity_id,
    method: r.method,
    username: r.username,
    certFingerprint: r.cert_fingerprint,
    certTbsSha256: r.cert_tbs_sha256,
    certPem: r.cert_pem,
    caId: r.ca_id,
    isExtendable: r.is_extendable,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** The authenticators' columns the list shows: the password hash never leaves the table here. */
const LISTED_COLUMNS = AUTHENTICATOR_COLUMNS.filter((c) => c !== 'password_hash');

/**
 * `GET /authenticators` reads the authenticators and the passkeys as one relation, so that
 * filters, sorting and paging apply to both alike (the columns a passkey lacks are null). A
 * passkey's `updated_at` is its last use, else its creation, as in `toListedPasskey`.
 */
function bothTables(db: Db) {
  const authenticators = db('authenticators').select(
    ...LISTED_COLUMNS,
    db.raw('NULL::text AS passkey_name'),
    db.raw('NULL::timestamptz AS last_used_at'),
  );
  const passkeys = db('passkeys').select(
    'id',
    'identity_id',
    db.raw("'passkey'::text AS method"),
    db.raw('NULL::text AS username'),
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
