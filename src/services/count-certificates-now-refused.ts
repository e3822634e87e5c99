import type { Knex } from 'knex';
import { permitsClientAuth, tryParseCertificate } from '../crypto/certificates.js';
import { authenticatorsRepository } from '../repositories/authenticators-repository.js';
import { casRepository } from '../repositories/cas-repository.js';

const BATCH = 1000;

/** Whether the stored leaf would be refused: no clientAuth purpose, or its CA is out of date. */
function refusedNow(certPem: string, caCertValid: boolean | undefined): boolean {
  return !permitsClientAuth(certPem) || caCertValid === false;
}

/**
 * How many enrolled client certificates the chain rules refuse at login although older versions
 * accepted them: a leaf whose extendedKeyUsage lacks clientAuth, or one whose 3rd-party CA
 * certificate is outside its validity period. Intermediates are not stored, so a path through an
 * expired one shows only at login. One batched pass over the cert authenticators, for a warning at
 * start (src/app.ts).
 */
export async function countCertificatesNowRefused(knex: Knex, at: Date): Promise<number> {
  const caValid = new Map<string, boolean>();
  for (const ca of await casRepository.listAuthEnabled(knex)) {
    // A warning must never stop a start: a CA certificate that cannot be read is left out.
    const dates = tryParseCertificate(ca.certPem);
    if (dates) caValid.set(ca.id, dates.notBefore <= at && at <= dates.notAfter);
  }
  let refused = 0;
  for (let after = ''; ;) {
    const rows = await authenticatorsRepository.certificatesAfter(knex, after, BATCH);
    if (rows.length === 0) return refused;
    after = rows[rows.length - 1]!.id;
    for (const row of rows) {
      if (
        row.certPem !== null &&
        refusedNow(row.certPem, row.caId === null ? undefined : caValid.get(row.caId))
      )
        refused += 1;
    }
  }
}
