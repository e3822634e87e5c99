import type { Knex } from 'knex';

/**
 * oidc-provider's models (one table for every model, keyed by model name and hashed id) and the signing
 * keys.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('oidc_payloads', (t) => {
    t.text('model').notNullable();
    t.text('id').notNullable();
    t.jsonb('payload').notNullable();
    t.text('grant_id');
    t.text('user_code');
    t.text('uid');
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('consumed_at', { useTz: true });
    t.primary(['model', 'id'], { constraintName: 'oidc_payloads__model_id_pk' });
  });
  await knex.raw(
    'CREATE INDEX oidc_payloads__grant_id_index ON oidc_payloads (grant_id) WHERE grant_id IS NOT NULL',
  );
  await knex.raw(
    'CREATE INDEX oidc_payloads__model_uid_index ON oidc_payloads (model, uid) WHERE uid IS NOT NULL',
  );
  await knex.raw(
    'CREATE INDEX oidc_payloads__expires_at_index ON oidc_payloads (expires_at) WHERE expires_at IS NOT NULL',
  );

  await knex.schema.createTable('signing_keys', (t) => {
    t.text('kid').primary({ constraintName: 'signing_keys__kid_pk' });
    t.text('alg').notNullable();
    t.text('private_jwk_enc').notNullable();
    t.jsonb('public_jwk').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Published from creation; signs from signs_from; retired when a newer key signs.
    t.timestamp('signs_from', { useTz: true }).notNullable();
    t.timestamp('retired_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('signing_keys');
  await knex.schema.dropTableIfExists('oidc_payloads');
}
