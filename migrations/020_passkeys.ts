import type { Knex } from 'knex';

/**
 * Passkeys (WebAuthn credentials), an extension beyond the service's specification.
 *
 * - `webauthn_user_handles`: the random user handle an identity's passkeys carry (WebAuthn's
 *   `user.id`). Never the identity's id or name: an authenticator shows it to anyone who asks, and
 *   a discoverable credential hands it back at a passwordless login.
 * - `passkeys`: one row per registered credential, gone with its identity.
 * - `webauthn_challenges`: a ceremony's challenge, bound to the auth request or session that
 *   started it (`bound_to`) and consumed by one conditional DELETE, so any instance can finish a
 *   ceremony and only once; the janitor removes those never used.
 *
 * Policies: `secondary_require_passkey`, and `primary_passkey_allowed`, which existing policies
 * get off and policies created from now on, and the `default` policy of a new installation, on
 * (the same `created_at = now()` rule as 018_policy_bind_tokens).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webauthn_user_handles', (t) => {
    t.text('identity_id')
      .primary({ constraintName: 'webauthn_user_handles__identity_id_pk' })
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('webauthn_user_handles__identity_id_fk');
    t.text('user_handle').notNullable().unique({ indexName: 'webauthn_user_handles__user_handle_unique' });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('passkeys', (t) => {
    t.text('id').primary({ constraintName: 'passkeys__id_pk' });
    t.text('identity_id')
      .notNullable()
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('passkeys__identity_id_fk');
    t.text('credential_id').notNullable().unique({ indexName: 'passkeys__credential_id_unique' });
    t.binary('public_key').notNullable();
    t.bigInteger('sign_count').notNullable().defaultTo(0);
    t.specificType('transports', 'text[]').notNullable().defaultTo('{}');
    t.boolean('backed_up').notNullable().defaultTo(false);
    t.text('device_type').notNullable();
    t.text('rp_id').notNullable();
    t.text('name').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_used_at', { useTz: true });
    t.index(['identity_id'], 'passkeys__identity_id_index');
  });

  await knex.schema.createTable('webauthn_challenges', (t) => {
    t.text('challenge').primary({ constraintName: 'webauthn_challenges__challenge_pk' });
    t.text('purpose').notNullable();
    t.text('identity_id')
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('webauthn_challenges__identity_id_fk');
    t.text('bound_to').notNullable();
    t.text('rp_id').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['expires_at'], 'webauthn_challenges__expires_at_index');
  });
  await knex.raw(
    "ALTER TABLE webauthn_challenges ADD CONSTRAINT webauthn_challenges__purpose_check CHECK (purpose IN ('registration', 'second-factor', 'passwordless'))",
  );

  await knex.schema.alterTable('auth_policies', (t) => {
    t.boolean('secondary_require_passkey').notNullable().defaultTo(false);
    t.boolean('primary_passkey_allowed').notNullable().defaultTo(false);
  });
  await knex.raw('ALTER TABLE auth_policies ALTER COLUMN primary_passkey_allowed SET DEFAULT true');
  await knex.raw(
    "UPDATE auth_policies SET primary_passkey_allowed = true WHERE id = 'default' AND created_at = now()",
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('auth_policies', (t) => {
    t.dropColumn('primary_passkey_allowed');
    t.dropColumn('secondary_require_passkey');
  });
  await knex.schema.dropTable('webauthn_challenges');
  await knex.schema.dropTable('passkeys');
  await knex.schema.dropTable('webauthn_user_handles');
}
