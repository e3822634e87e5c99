import type { Knex } from 'knex';

/**
 * The poll state of a device code (RFC 8628 §3.5), kept on its own `oidc_payloads` row because
 * polls reach any instance: when it was last polled and the interval its device must keep (null
 * until the first poll: the advertised 5 s), and whether that last poll came too early (the
 * `slow_down` verdict of the statement that recorded it). Other models leave them null.
 *
 * The person's side finds a device code by its user code (and saves it back by that code, since
 * the device code itself is stored only as its hash): an index, unique so that one typed code
 * can never name two devices (the provider draws 8 of 20 letters; a collision fails the newer
 * device authorization request, which the device retries).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oidc_payloads', (t) => {
    t.timestamp('polled_at', { useTz: true }).nullable();
    t.integer('poll_interval').nullable();
    t.boolean('polled_too_early').nullable();
  });
  await knex.raw(
    'CREATE UNIQUE INDEX oidc_payloads_user_code ON oidc_payloads (model, user_code) WHERE user_code IS NOT NULL',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX oidc_payloads_user_code');
  await knex.schema.alterTable('oidc_payloads', (t) => {
    t.dropColumn('polled_too_early');
    t.dropColumn('poll_interval');
    t.dropColumn('polled_at');
  });
}
