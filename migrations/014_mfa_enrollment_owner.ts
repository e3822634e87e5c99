import type { Knex } from 'knex';

/**
 * The API session that started a TOTP enrollment. A session whose MFA step is still owed may see
 * and verify only the enrollment it started (docs/security.md, "Second factors"); the secret of
 * any other one may be its owner's. No foreign key: a session that has ended simply matches no
 * caller any more. Null for enrollments started by an OIDC login (it keeps its own marker) and
 * for those that existed before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('mfa_totp', (t) => {
    t.text('started_by_session');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('mfa_totp', (t) => {
    t.dropColumn('started_by_session');
  });
}
