import type { Db } from '../db/create-database.js';
import { hashTokenId } from '../crypto/token-id-hash.js';
import { fixedStatement, runFixed } from '../db/fixed-statement.js';
import { IDENTITY_COLUMNS, toIdentity, type Identity } from './identities-repository.js';
import type { StoredOidcPayload } from './oidc-payloads-repository.js';

/** The tokens a token request redeems: read with their grant in one statement. */
export type GrantTokenModel = 'AuthorizationCode' | 'RefreshToken' | 'DeviceCode';

/**
 * Everything a code exchange or a refresh grant checks before it issues tokens, as it stood at one
 * instant: the code or refresh token, its grant, our login facts of the grant with its API
 * session's expiry, and the identity.
 */
export interface TokenWithGrant {
  token: StoredOidcPayload;
  /** The token's `accountId` as stored beside it. */
  accountId: string | null;
  /** Undefined when the grant is gone or expired. */
  grant: StoredOidcPayload | undefined;
  /** Our facts of the grant (undefined when gone or expired) and the end of their API session. */
  facts: Record<string, unknown> | undefined;
  sessionExpiresAt: Date | null;
  /** Undefined when the identity no longer exists. */
  identity: Identity | undefined;
  /** The signer whose JWT the identity's policy requires beside every token (`secondary.requireExtJwt`). */
  requireExtJwtSigner: string | null;
}

const json = (v: unknown): Record<string, unknown> =>
  typeof v === 'string' ? JSON.parse(v) : (v as Record<string, unknown>);

const stored = (payload: unknown, consumedAt: Date | null): StoredOidcPayload => ({
  payload: json(payload),
  consumedAt,
});

/*
 * A Grant and our SvcLogin facts are keyed by the grant id's hash, which is what a code's or a
 * refresh token's `grant_id` holds (docs/adr/0004-hashed-token-ids.md); the facts row keeps its API
 * session id in `uid`. Every model row counts only until it expires, like a single find. The
 * identity's policy brings the secondary JWT signer a refresh grant must be shown a JWT of.
 */
const READ = fixedStatement(`
SELECT t.payload, t.consumed_at, t.account_id,
       g.id AS g_id, g.payload AS g_payload, g.consumed_at AS g_consumed_at,
       f.id AS f_id, f.payload AS f_payload, s.expires_at AS s_expires_at,
       ${IDENTITY_COLUMNS.map((c) => `i.${c} AS i_${c}`).join(', ')},
       p.secondary_require_ext_jwt_signer_id AS p_require_ext_jwt_signer
  FROM oidc_payloads t
  LEFT JOIN oidc_payloads g
         ON g.model = 'Grant' AND g.id = t.grant_id AND (g.expires_at IS NULL OR g.expires_at > ?)
  LEFT JOIN oidc_payloads f
         ON f.model = 'SvcLogin' AND f.id = t.grant_id AND (f.expires_at IS NULL OR f.expires_at > ?)
  LEFT JOIN api_sessions s ON s.id = f.uid
  LEFT JOIN identities i ON i.id = t.account_id
  LEFT JOIN auth_policies p ON p.id = i.auth_policy_id
 WHERE t.model = ? AND t.id = ? AND (t.expires_at IS NULL OR t.expires_at > ?)
 LIMIT 1`);

/**
 * The one read of a code exchange or a refresh grant: oidc_payloads joined with api_sessions and
 * identities (the replay reasoning is at the adapter's `findWithGrant`).
 */
export const tokenWithGrantRepository = {
  async find(
    db: Db,
    model: GrantTokenModel,
    tokenId: string,
    now: Date,
  ): Promise<TokenWithGrant | undefined> {
    const [r] = await runFixed(db, READ, [now, now, model, hashTokenId(tokenId), now]);
    if (!r) return undefined;
    const identityRow = Object.fromEntries(IDENTITY_COLUMNS.map((c) => [c, r[`i_${c}`]]));
    return {
      token: stored(r.payload, r.consumed_at as Date | null),
      accountId: (r.account_id as string | null) ?? null,
      grant: r.g_id ? stored(r.g_payload, r.g_consumed_at as Date | null) : undefined,
      facts: r.f_id ? json(r.f_payload) : undefined,
      sessionExpiresAt: (r.s_expires_at as Date | null) ?? null,
      identity: r.i_id ? toIdentity(identityRow as unknown as Parameters<typeof toIdentity>[0]) : undefined,
      requireExtJwtSigner: (r.p_require_ext_jwt_signer as string | null) ?? null,
    };
  },
};
