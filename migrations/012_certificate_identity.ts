import type { Knex } from 'knex';
import { createHash } from 'node:crypto';

/** DER content start and length of the TLV at `at` (short and long length forms). */
function header(der: Buffer, at: number): { start: number; length: number } {
  const first = der[at + 1] ?? 0;
  if (first < 0x80) return { start: at + 2, length: first };
  const count = first & 0x7f;
  let length = 0;
  for (let i = 0; i < count; i += 1) length = length * 256 + (der[at + 2 + i] ?? 0);
  return { start: at + 2 + count, length };
}

/**
 * SHA-256 of the tbsCertificate of the first certificate in `pem`, or null when there is none.
 * Written out here rather than imported, so that this migration stays what it was when it landed.
 */
function tbsSha256(pem: string): string | null {
  const body = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/.exec(pem)?.[1];
  if (!body) return null;
  const der = Buffer.from(body.replace(/\s+/g, ''), 'base64');
  if (der[0] !== 0x30) return null;
  const outer = header(der, 0);
  if (der[outer.start] !== 0x30) return null;
  const tbs = header(der, outer.start);
  const end = tbs.start + tbs.length;
  if (end > der.length) return null;
  return createHash('sha256').update(der.subarray(outer.start, end)).digest('hex');
}

const BATCH = 500;

/**
 * A certificate is named by the hash of what its CA signed (`cert_tbs_sha256`), which an ECDSA
 * signature re-encoded as (r, n − s) does not change; `cert_fingerprint` (SHA-1 of the whole DER)
 * stays what the API shows. The hash is computed here from the stored PEMs, in JS, so the same
 * code serves PostgreSQL and PGlite. Should two stored rows already be copies of one certificate,
 * the oldest keeps the hash and the others keep null: they still log in by their exact fingerprint,
 * and nobody is locked out by an upgrade.
 *
 * `blocked_certificates`: certificates whose identity an admin deleted; auto CA enrollment refuses
 * them. They outlive the identity; they go with their CA.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('authenticators', (t) => {
    t.text('cert_tbs_sha256');
  });
  for (let after = ''; ;) {
    const rows: { id: string; cert_pem: string }[] = await knex('authenticators')
      .whereNotNull('cert_pem')
      .andWhere('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .select('id', 'cert_pem');
    if (rows.length === 0) break;
    after = rows[rows.length - 1]!.id;
    for (const row of rows) {
      const hash = tbsSha256(row.cert_pem);
      if (hash === null) continue;
      await knex('authenticators').where({ id: row.id }).update({ cert_tbs_sha256: hash });
    }
  }
  await clearLaterCopies(knex);
  await knex.schema.alterTable('authenticators', (t) => {
    t.unique(['cert_tbs_sha256'], { indexName: 'authenticators__cert_tbs_sha256_unique' });
  });

  await knex.schema.createTable('blocked_certificates', (t) => {
    t.text('id').primary({ constraintName: 'blocked_certificates__id_pk' });
    t.text('ca_id')
      .notNullable()
      .references('id')
      .inTable('cas')
      .onDelete('CASCADE')
      .withKeyName('blocked_certificates__ca_id_fk');
    t.text('tbs_sha256').notNullable();
    t.text('fingerprint').notNullable();
    t.text('subject').notNullable();
    t.text('common_name');
    t.text('identity_id').notNullable();
    t.text('identity_name').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['ca_id', 'tbs_sha256'], { indexName: 'blocked_certificates__ca_id_tbs_sha256_unique' });
    t.index(['tbs_sha256'], 'blocked_certificates__tbs_sha256_index');
  });
}

/** Of rows sharing a hash, all but the oldest go back to null (see `up`). */
async function clearLaterCopies(knex: Knex): Promise<void> {
  const dupes: { cert_tbs_sha256: string }[] = await knex('authenticators')
    .whereNotNull('cert_tbs_sha256')
    .groupBy('cert_tbs_sha256')
    .havingRaw('count(*) > 1')
    .select('cert_tbs_sha256');
  for (const { cert_tbs_sha256: hash } of dupes) {
    const copies: { id: string }[] = await knex('authenticators')
      .where({ cert_tbs_sha256: hash })
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .select('id');
    const later = copies.slice(1).map((c) => c.id);
    await knex('authenticators').whereIn('id', later).update({ cert_tbs_sha256: null });
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('blocked_certificates');
  await knex.schema.alterTable('authenticators', (t) => {
    t.dropUnique(['cert_tbs_sha256'], 'authenticators__cert_tbs_sha256_unique');
    t.dropColumn('cert_tbs_sha256');
  });
}
