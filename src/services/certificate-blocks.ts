import type { Knex } from 'knex';
import { mapPage, type ListQuery } from '../db/list-query.js';
import type { AfterCommit } from '../db/transaction.js';
import { inTransaction } from '../db/transaction.js';
import { AppError } from '../errors/app-error.js';
import { tryParseCertificate } from '../crypto/certificates.js';
import { newId } from '../crypto/random.js';
import type { Authenticator } from '../repositories/authenticators-repository.js';
import { blockedCertificatesRepository } from '../repositories/blocked-certificates-repository.js';
import { casRepository } from '../repositories/cas-repository.js';
import type { Identity } from '../repositories/identities-repository.js';
import type { AuditTrail } from './audit-trail.js';
import { blockedCertificateView } from './blocked-certificate-view.js';

/**
 * Inside the transaction that deletes `authenticators` (one, or all of a deleted identity's): each
 * certificate a registered 3rd-party CA issued goes on that CA's block list, so auto CA enrollment
 * cannot turn the same device into a new identity. Deleting the identity ends "all current and
 * future access", and deleting only its certificate authenticator is the same decision about the
 * device (docs/operations.md "Stopping a device").
 */
export async function blockCertificatesOf(
  trx: Knex.Transaction,
  afterCommit: AfterCommit,
  identity: Pick<Identity, 'id' | 'name'>,
  authenticators: Authenticator[],
  audit: AuditTrail,
): Promise<void> {
  for (const a of authenticators) {
    if (a.method !== 'cert' || a.caId === null || a.certPem === null) continue;
    if (!(await casRepository.findById(trx, a.caId))) continue; // its CA is gone: nothing enrolls by it
    const cert = tryParseCertificate(a.certPem);
    if (!cert) continue;
    const entry = await blockedCertificatesRepository.insert(trx, {
      id: newId(),
      caId: a.caId,
      tbsSha256: cert.tbsSha256,
      fingerprint: a.certFingerprint ?? cert.fingerprint,
      subject: cert.subjectDn,
      commonName: cert.subjectCn ?? null,
      identityId: identity.id,
      identityName: identity.name,
    });
    if (!entry) continue;
    await audit.store(trx, afterCommit, {
      event: 'certificate.blocked',
      identityId: identity.id,
      caId: entry.caId,
      blockId: entry.id,
      fingerprint: entry.fingerprint,
      tbsSha256: entry.tbsSha256,
    });
  }
}

const noSuchCa = () => new AppError('NOT_FOUND', { message: 'no CA with this id' });

/** The block lists of the management API: `/cas/{id}/blocked-certificates`. */
export function createCertificateBlocks({ knex, audit }: { knex: Knex; audit: AuditTrail }) {
  return {
    async listBlocked(caId: string, q: ListQuery) {
      if (!(await casRepository.findById(knex, caId))) throw noSuchCa();
      const page = await blockedCertificatesRepository.list(knex, caId, q);
      return mapPage(page, (items) => items.map(blockedCertificateView));
    },

    /** Lifts a block: the certificate may enroll again (as a new identity). */
    async unblock(caId: string, id: string): Promise<void> {
      await inTransaction(knex, async (trx, afterCommit) => {
        if (!(await casRepository.findById(trx, caId))) throw noSuchCa();
        const removed = await blockedCertificatesRepository.delete(trx, caId, id);
        if (!removed) throw new AppError('NOT_FOUND', { message: 'no blocked certificate with this id' });
        await audit.store(trx, afterCommit, {
          event: 'certificate.unblocked',
          caId,
          blockId: id,
          fingerprint: removed.fingerprint,
          tbsSha256: removed.tbsSha256,
        });
      });
    },
  };
}

export type CertificateBlocks = ReturnType<typeof createCertificateBlocks>;
