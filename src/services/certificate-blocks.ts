import type { Knex } from 'knex';
import { mapPage, type ListQuery } from '../db/list-query.js';
import type { AfterCommit } from '../db/transaction.js';
import { inTransaction } from '../db/transaction.js';
import { AppError } from '../errors/app-error.js';
import { CertificateError, parseCertificate } from '../crypto/certificates.js';
import { newId } from '../crypto/random.js';
import { authenticatorsRepository } from '../repositories/authenticators-repository.js';
import {
  blockedCertificatesRepository,
  type BlockedCertificate,
} from '../repositories/blocked-certificates-repository.js';
import { casRepository } from '../repositories/cas-repository.js';
import type { Identity } from '../repositories/identities-repository.js';
import type { BlockedCertificateView } from '../schemas/ca-views.js';
import type { AuditTrail } from './audit-trail.js';

export const blockedCertificateView = (b: BlockedCertificate): BlockedCertificateView => ({
  id: b.id,
  caId: b.caId,
  tbsSha256: b.tbsSha256,
  fingerprint: b.fingerprint,
  subject: b.subject,
  commonName: b.commonName,
  identityId: b.identityId,
  identityName: b.identityName,
  createdAt: b.createdAt.toISOString(),
});

/**
 * Inside the transaction that deletes `identity`: each certificate a registered 3rd-party CA
 * issued to it goes on that CA's block list, so auto CA enrollment cannot turn the same device
 * into a new identity (deletion ends "all current and future access"; docs/operations.md).
 */
export async function blockCertificatesOf(
  trx: Knex.Transaction,
  afterCommit: AfterCommit,
  identity: Identity,
  audit: AuditTrail,
): Promise<void> {
  for (const a of await authenticatorsRepository.listForIdentity(trx, identity.id)) {
    if (a.method !== 'cert' || a.caId === null || a.certPem === null) continue;
    if (!(await casRepository.findById(trx, a.caId))) continue; // its CA is gone: nothing enrolls by it
    let cert;
    try {
      cert = parseCertificate(a.certPem);
    } catch (err) {
      if (err instanceof CertificateError) continue;
      throw err;
    }
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
    audit.recordAfterCommit(afterCommit, {
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
        audit.recordAfterCommit(afterCommit, {
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
