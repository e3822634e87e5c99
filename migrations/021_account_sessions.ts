import type { Knex } from 'knex';

/**
 * The account page's own sessions (docs/adr/0014-account-page.md). A row is first a sign-in in
 * flight (`kind = 'login'`: the sealed state, nonce and PKCE verifier of one authorization request,
 * consumed by the callback in one DELETE), then a signed-in session (`kind = 'session'`: the
 * identity, its API session, the sealed tokens and CSRF secret). Rows are found by the SHA-256 of
 * the cookie that names them, never by the cookie itself, so any instance serves them and a
 * database dump holds nothing a browser could present. `refreshing_until` is the claim of the one
 * request that refreshes the access token (a refresh token is single use).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('account_sessions', (t) => {
    t.text('id_hash').primary();
    t.text('kind').notNullable();
    t.text('identity_id').nullable().references('id').inTable('identities').onDelete('CASCADE');
    t.text('api_session_id').nullable();
    /** The `host:port` of the issuer the login went through: its tokens are redeemed there only. */
    t.text('issuer_address').notNullable();
    t.text('login_sealed').nullable();
    t.text('tokens_sealed').nullable();
    t.integer('tokens_version').notNullable().defaultTo(0);
    t.timestamp('access_expires_at', { useTz: true }).nullable();
    t.timestamp('refreshing_until', { useTz: true }).nullable();
    t.text('csrf_sealed').nullable();
    t.timestamp('auth_time', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.check(`kind IN ('login', 'session')`);
    t.index(['expires_at']);
    t.index(['identity_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('account_sessions');
}
