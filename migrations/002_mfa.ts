import type { Knex } from 'knex';

/** TOTP configuration, recovery codes and the TOTP failure window. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('mfa_totp', (t) => {
    t.text('identity_id')
      .primary({ constraintName: 'mfa_totp__identity_id_pk' })
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('mfa_totp__identity_id_fk');
    t.text('secret_enc').notNullable();
    t.boolean('is_verified').notNullable().defaultTo(false);
    // The last accepted RFC 6238 time step: a code is accepted once per identity.
    t.bigInteger('last_used_step').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('verified_at', { useTz: true });
  });

  await knex.schema.createTable('mfa_recovery_codes', (t) => {
    t.text('identity_id')
      .notNullable()
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('mfa_recovery_codes__identity_id_fk');
    t.text('code_hash').notNullable();
    t.timestamp('used_at', { useTz: true });
    t.primary(['identity_id', 'code_hash'], { constraintName: 'mfa_recovery_codes__pk' });
  });

  await knex.schema.createTable('totp_failures', (t) => {
    t.text('identity_id')
      .primary({ constraintName: 'totp_failures__identity_id_pk' })
      .references('id')
      .inTable('identities')
      .onDelete('CASCADE')
      .withKeyName('totp_failures__identity_id_fk');
    t.timestamp('window_started_at', { useTz: true }).notNullable();
    t.integer('failures').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('totp_failures');
  await knex.schema.dropTableIfExists('mfa_recovery_codes');
  await knex.schema.dropTableIfExists('mfa_totp');
}
