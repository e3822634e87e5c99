import type { Knex } from 'knex';

/** SQL twin of src/crypto/token-id-hash.ts: SHA-256, base64url without padding. */
const sha256Base64url = (column: string) =>
  `rtrim(translate(encode(sha256(convert_to(${column}, 'UTF8')), 'base64'), '+/', '-_'), '=')`;

/**
 * oidc-provider's ids are bearer secrets: rows are keyed by their hash and payloads no longer
 * carry `jti` (docs/adr/0004-hashed-token-ids.md). Short-lived rows (logins in progress, codes,
 * pushed requests, replay markers) are dropped: an interaction's payload also holds its id in
 * `returnTo`, and a login in progress is restarted by its client. Sessions, grants, refresh tokens
 * and our login facts are converted in place, so nobody is logged out. `sha256()` is built into
 * PostgreSQL 11+ and PGlite.
 */
export async function up(knex: Knex): Promise<void> {
  await knex('oidc_payloads')
    .whereIn('model', ['Interaction', 'AuthorizationCode', 'PushedAuthorizationRequest', 'ReplayDetection'])
    .delete();
  await knex.raw(
    `UPDATE oidc_payloads SET
       id = ${sha256Base64url('id')},
       grant_id = CASE WHEN grant_id IS NULL THEN NULL ELSE ${sha256Base64url('grant_id')} END,
       payload = payload - 'jti'`,
  );
}

/** A hash cannot be undone: going back ends every session, grant and token. */
export async function down(knex: Knex): Promise<void> {
  await knex('oidc_payloads').delete();
}
