import type { Knex } from 'knex';
import { isUniqueViolation } from '../db/db-errors.js';
import { withConstraintErrors } from '../db/constraint-errors.js';
import { AppError, validationError } from '../errors/app-error.js';
import { checkName } from '../schemas/name-rules.js';
import {
  CertificateError,
  parseCertificate,
  permitsClientAuth,
  verifyChain,
  type ParsedCertificate,
} from '../crypto/certificates.js';
import { toPem } from '../crypto/pki-keys.js';
import { newId } from '../crypto/random.js';
import { authenticatorsRepository } from '../repositories/authenticators-repository.js';
import { blockedCertificatesRepository } from '../repositories/blocked-certificates-repository.js';
import { casRepository, type Ca } from '../repositories/cas-repository.js';
import { identitiesRepository, roleAttributesRepository } from '../repositories/identities-repository.js';
import { NO_AUDIT, type AuditTrail } from './audit-trail.js';
import { firstFreeName, formatIdentityName, suffixWidth } from './identity-name-format.js';

export interface CaAutoEnrollmentDeps {
  knex: Knex;
  audit?: AuditTrail;
  now?: () => Date;
}

// The identity name limit of the management API, so every name stays editable there.
const MAX_NAME = 255;
// Parallel enrollments may pick the same free name; the loser looks again instead of failing.
const NAME_ATTEMPTS = 3;

/** Every refusal of the certificate is the same 401 as a refused certificate login. */
const refused = (detail: string) => new AppError('INVALID_AUTH', { detail });

const certificateInUse = () =>
  new AppError('CONFLICT', {
    message: 'the client certificate is already enrolled',
    cause: { field: 'fingerprint', reason: 'the certificate is already in use' },
  });

/**
 * An end-entity certificate for client authentication inside its validity period (verifyChain
 * leaves the leaf's dates and key purpose to callers).
 */
function usableLeaf(der: Buffer, at: Date): ParsedCertificate {
  let cert;
  try {
    cert = parseCertificate(der);
  } catch (err) {
    if (err instanceof CertificateError) throw refused('unparseable client certificate');
    throw err;
  }
  if (cert.isCa) throw refused('a CA certificate is not a client certificate');
  if (cert.notBefore > at || cert.notAfter <= at) throw refused('certificate expired or not yet valid');
  if (!permitsClientAuth(der)) throw refused('the certificate is not for client authentication');
  return cert;
}

/**
 * Auto CA enrollment (`POST /enroll?method=ca`, as OpenZiti's `isAutoCaEnrollmentEnabled`): a TLS
 * client certificate that chains to a verified CA with the flag on becomes, in one transaction, a
 * new identity — named by the CA's `identityNameFormat`, with the CA's `identityRoles` as role
 * attributes and the default auth policy — and the cert authenticator that binds the certificate
 * to it, exactly as an OTTCA enrollment would. Returns the new identity's id.
 */
export function createCaAutoEnrollment({
  knex,
  audit = NO_AUDIT,
  now = () => new Date(),
}: CaAutoEnrollmentDeps) {
  /** The first verified, auto-enrolling CA the chain reaches; a malformed intermediate reaches none. */
  async function issuingCa(leaf: Buffer, intermediates: Buffer[], at: Date): Promise<Ca | undefined> {
    const pems = intermediates.map((der) => toPem('CERTIFICATE', der));
    try {
      for (const ca of await casRepository.listAutoEnrollEnabled(knex)) {
        if (await verifyChain(leaf, pems, [ca.certPem], at)) return ca;
      }
    } catch (err) {
      if (!(err instanceof CertificateError)) throw err;
    }
    return undefined;
  }

  return async function enrollWithCa(peerChain: Buffer[], requestedName?: string): Promise<string> {
    const [leaf, ...intermediates] = peerChain;
    if (!leaf) throw refused('no client certificate');
    const at = now();
    const cert = usableLeaf(leaf, at);
    const ca = await issuingCa(leaf, intermediates, at);
    if (!ca) throw refused('certificate not issued by a verified CA with auto CA enrollment');
    // By the signed content, not the DER: a re-encoded signature is the same certificate.
    if (await blockedCertificatesRepository.isBlocked(knex, cert.tbsSha256))
      throw refused('the certificate is blocked: its identity was deleted');
    // Checked here for a clear answer; the unique constraints settle a race the same way.
    if (await authenticatorsRepository.findByCertificate(knex, cert)) throw certificateInUse();

    const identityId = newId();
    const commonName = cert.subjectCn ?? '';
    const base = formatIdentityName(ca.identityNameFormat, {
      caName: ca.name,
      caId: ca.id,
      commonName,
      requestedName: requestedName ?? commonName,
      identityId,
    }).trim();
    if (base === '' || [...base].length > MAX_NAME - suffixWidth) {
      throw validationError('name', `the identity name must be 1 to ${MAX_NAME - suffixWidth} characters`);
    }
    // The common name comes from a certificate, not a request body: the edge check never saw it.
    checkName('name', base);

    const create = () =>
      knex.transaction(async (trx) => {
        const taken = await identitiesRepository.namesStartingWith(trx, base, suffixWidth);
        const name = firstFreeName(base, taken);
        if (!name)
          throw new AppError('CONFLICT', { cause: { field: 'name', reason: 'no free identity name' } });
        await identitiesRepository.insert(trx, {
          id: identityId,
          name,
          type: 'Default',
          isAdmin: false,
          authPolicyId: 'default',
        });
        await roleAttributesRepository.replace(trx, identityId, ca.identityRoles);
        await authenticatorsRepository.insert(trx, {
          id: newId(),
          identityId,
          method: 'cert',
          certFingerprint: cert.fingerprint,
          certTbsSha256: cert.tbsSha256,
          certPem: toPem('CERTIFICATE', leaf),
          caId: ca.id,
        });
      });
    // Each attempt is its own transaction: a lost race for the name aborts the one it ran in.
    await withConstraintErrors(async () => {
      for (let attempt = 1; ; attempt += 1) {
        try {
          return await create();
        } catch (err) {
          if (attempt >= NAME_ATTEMPTS || !isUniqueViolation(err, 'identities__name_unique')) throw err;
        }
      }
    });
    // Recorded once the attempt that succeeded has committed.
    audit.record({
      event: 'enrollment.completed',
      identityId,
      method: 'ca',
      caId: ca.id,
      created: true,
    });
    return identityId;
  };
}

export type CaAutoEnrollment = ReturnType<typeof createCaAutoEnrollment>;
