import type { BlockedCertificate } from '../repositories/blocked-certificates-repository.js';
import type { BlockedCertificateView } from '../schemas/ca-views.js';

/** What the management API shows of a block-list entry. */
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
