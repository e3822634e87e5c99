import type { Knex } from 'knex';

/** Identities, their authenticators, enrollments and sessions; policies, signers, CAs; secrets. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('secrets', (t) => {
    t.text('name').primary({ constraintName: 'secrets__name_pk' });
    t.text('value').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('external_jwt_signers', (t) => {
    t.text('id').primary({ constraintName: 'external_jwt_signers__id_pk' });
    t.text('name').notNullable().unique({ indexName: 'external_jwt_signers__name_unique' });
    t.boolean('enabled').notNullable().defaultTo(true);
    t.text('issuer').notNullable().unique({ indexName: 'external_jwt_signers__issuer_unique' });
    t.text('audience');
    t.text('cert_pem');
    t.text('jwks_endpoint');
    t.text('kid');
    t.text('claims_property').notNullable().defaultTo('sub');
    t.boolean('use_external_id').notNullable().defaultTo(true);
    t.text('external_auth_url');
    t.text('client_id');
    t.jsonb('scopes').notNullable().defaultTo('[]');
    t.timestamps(true, true, false);
  });

  await knex.schema.createTable('auth_policies', (t) => {
    t.text('id').primary({ constraintName: 'auth_policies__id_pk' });
    t.text('name').notNullable().unique({ indexName: 'auth_policies__name_unique' });
    t.boolean('cert_allowed').notNullable();
    t.boolean('cert_allow_expired').notNullable();
    t.boolean('updb_allowed').notNullable();
    t.integer('updb_min_password_length').notNullable();
    t.boolean('updb_require_special_char').notNullable();
    t.boolean('updb_require_number_char').notNullable();
    t.boolean('updb_require_mixed_case').notNullable();
    t.integer('updb_max_attempts').notNullable();
    t.integer('updb_lockout_duration_minutes').notNullable();
    t.boolean('ext_jwt_allowed').notNullable();
    t.boolean('secondary_require_totp').notNullable();
    t.text('secondary_require_ext_jwt_signer_id')
      .references('id')
      .inTable('external_jwt_signers')
      .onDelete('RESTRICT')
      .withKeyName('auth_policies__secondary_require_ext_jwt_signer_id_fk');
    t.timestamps(true, true, false);
  });

  await knex.schema.createTable('auth_policy_allowed_signers', (t) => {
    t.text('auth_policy_id')
      .notNullable()
      .references('id')
      .inTable('auth_policies')
      .onDelete('CASCADE')
      .withKeyName('auth_policy_allowed_signers__auth_policy_id_fk');
    t.text('signer_id')
      .notNullable()
      .references('id')
      .inTable('external_jwt_signers')
      .onDelete('RESTRICT')
      .withKeyName('auth_policy_allowed_signers__signer_id_fk');
    t.primary(['auth_policy_id', 'signer_id'], { constraintName: 'auth_policy_allowed_signers__pk' });
  });

  // Policy `default` always exists: certificate and UPDB allowed, no secondary.
  await knex('auth_policies').insert({
    id: 'default',
    name: 'Default',
    cert_allowed: true,
    cert_allow_expired: false,
    updb_allowed: true,
    updb_min_password_length: 8,
    updb_require_special_char: false,
    updb_require_number_char: false,
    updb_require_mixed_case: false,
    updb_max_attempts: 0,
    updb_lockout_duration_minutes: 0,
    ext_jwt_allowed: false,
    secondary_require_totp: false,
  });

  await knex.schema.createTable('cas', (t) => {
    t.text('id').primary({ constraintName: 'cas__id_pk' });
    t.text('name').notNullable().unique({ indexName: 'cas__name_unique' });
    t.text('cert_pem').notNullable();
    t.text('fingerprint').notNullable().unique({ indexName: 'cas__fingerprint_unique' });
    t.boolean('is_auth_enabled').notNullable().defaultTo(true);
    t.boolean('is_ott_ca_enrollment_enabled').notNullable().defaultTo(true);
    t.boolean('is_auto_ca_enrollment_enabled').notNullable().defaultTo(false);
    t.jsonb('identity_roles').notNullable().defaultTo('[]');
    t.boolean('is_verified').notNullable().defaultTo(false);
    t.text('verification_token').notNullable();
    t.timestamps(true, true, false);
  });

  await knex.schema.createTable('identities', (t) => {
    t.text('id').primary({ constraintName: 'identities__id_pk' });
    t.text('name').notNullable().unique({ indexName: 'identities__name_unique' });
    t.text('type').notNullable();
    t.boolean('is_admin').notNullable();
    t.boolean('is_default_admin').notNullable().defaultTo(false);
    t.text('external_id').unique({ indexName: 'identities__external_id_unique' });
    t.text('auth_policy_id')
      .notNullable()
      .references('id')
      .inTable('auth_policies')
      .onDelete('RESTRICT')
      .withKeyName('identities__auth_policy_id_fk');
    t.jsonb('tags').notNullable().defaultTo('{}');
    t.boolean('disabled').notNullable().defaultTo(false);
    t.timestamp('disabled_until', { useTz: true });
    // Bumped whenever every token of the identity must stop working (delete, disable, privilege change).
    t.integer('token_generation').notNullable().defaultTo(0);
    t.timestamps(true, true, false);
  });

  await knex.schema.createTable('identity_role_attributes', (t) => {
    t.text('identity_id')
      .notNullable()
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('identity_role_attributes__identity_id_fk');
    t.text('attribute').notNullable();
    t.primary(['identity_id', 'attribute'], { constraintName: 'identity_role_attributes__pk' });
  });

  await knex.schema.createTable('authenticators', (t) => {
    t.text('id').primary({ constraintName: 'authenticators__id_pk' });
    t.text('identity_id')
      .notNullable()
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('authenticators__identity_id_fk');
    t.text('method').notNullable();
    t.text('username').unique({ indexName: 'authenticators__username_unique' });
    t.text('password_hash');
    t.text('cert_fingerprint').unique({ indexName: 'authenticators__cert_fingerprint_unique' });
    t.text('cert_pem');
    t.text('ca_id');
    t.boolean('is_extendable').notNullable().defaultTo(false);
    t.timestamps(true, true, false);
    t.unique(['identity_id', 'method'], { indexName: 'authenticators__identity_id_method_unique' });
  });

  await knex.schema.createTable('enrollments', (t) => {
    t.text('id').primary({ constraintName: 'enrollments__id_pk' });
    t.text('identity_id')
      .notNullable()
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('enrollments__identity_id_fk');
    t.text('method').notNullable();
    t.text('token').notNullable().unique({ indexName: 'enrollments__token_unique' });
    t.text('username');
    t.text('ca_id').references('id').inTable('cas').onDelete('CASCADE').withKeyName('enrollments__ca_id_fk');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['identity_id', 'method'], { indexName: 'enrollments__identity_id_method_unique' });
  });

  await knex.schema.createTable('api_sessions', (t) => {
    t.text('id').primary({ constraintName: 'api_sessions__id_pk' });
    t.text('identity_id')
      .notNullable()
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('api_sessions__identity_id_fk');
    t.text('kind').notNullable(); // 'legacy' | 'oidc'
    t.text('token_hash').unique({ indexName: 'api_sessions__token_hash_unique' });
    t.jsonb('amr').notNullable().defaultTo('[]');
    t.jsonb('config_types').notNullable().defaultTo('[]');
    t.boolean('is_cert_extendable').notNullable().defaultTo(false);
    t.boolean('mfa_required').notNullable().defaultTo(false);
    t.boolean('mfa_complete').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_activity_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.index(['identity_id'], 'api_sessions__identity_id_index');
    t.index(['expires_at'], 'api_sessions__expires_at_index');
  });

  await knex.schema.createTable('login_failures', (t) => {
    t.text('identity_id')
      .primary({ constraintName: 'login_failures__identity_id_pk' })
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('login_failures__identity_id_fk');
    t.integer('consecutive').notNullable().defaultTo(0);
    t.timestamp('window_started_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.integer('in_window').notNullable().defaultTo(0);
  });

  // Revocation events, read by every instance (LISTEN/NOTIFY plus a catch-up read by id).
  await knex.schema.createTable('revocations', (t) => {
    t.bigIncrements('id');
    t.text('kind').notNullable(); // 'identity' | 'api_session' | 'token'
    t.text('subject').notNullable();
    t.integer('generation');
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['expires_at'], 'revocations__expires_at_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'revocations',
    'login_failures',
    'api_sessions',
    'enrollments',
    'authenticators',
    'identity_role_attributes',
    'identities',
    'cas',
    'auth_policy_allowed_signers',
    'auth_policies',
    'external_jwt_signers',
    'secrets',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
