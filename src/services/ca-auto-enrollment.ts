import type { Knex } from 'knex';
import { isUniqueViolation } from '../db/db-errors.js';
import { withConstraintErrors } from '../db/constraint-errors.js';
import type { AfterCommit } from '../db/transaction.js';
import { AppError, validationError } from '../errors/app-error.js';
import { checkName, trimSpaces } from '../schemas/name-rules.js';
import {
  CertificateError,
  readClientLeaf,
  verifyChain,
  type ClientLeafProblem,
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

const LEAF_REFUSALS: Record<ClientLeafProblem, string> = {
  unreadable: 'unparseable client certificate',
  'ca-certificate': 'a CA certificate is not a client certificate',
  'outside-validity': 'certificate expired or not yet valid',
  'not-client-auth': 'the certificate is not for client authentication',
};

const blocked = () => refused('the certificate is blocked: its identity was deleted');

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
    const { cert, problem } = readClientLeaf(leaf, at);
    if (problem) throw refused(LEAF_REFUSALS[problem]);
    const ca = await issuingCa(leaf, intermediates, at);
    if (!ca) throw refused('certificate not issued by a verified CA with auto CA enrollment');
    // Checked here for a clear answer; the unique constraints settle a race the same way.
    if (await authenticatorsRepository.findByCertificate(knex, cert)) throw certificateInUse();

    const identityId = newId();
    const commonName = cert.subjectCn ?? '';
    const formatted = formatIdentityName(ca.identityNameFormat, {
      caName: ca.name,
      caId: ca.id,
      commonName,
      requestedName: requestedName ?? commonName,
      identityId,
    });
    // Counted before trimming: a certificate's common name is refused by its length alone.
    const tooLong = [...formatted].length > MAX_NAME - suffixWidth;
    // Spaces only: an invisible U+FEFF around a common name is refused by checkName, not removed.
    const base = tooLong ? '' : trimSpaces(formatted);
    if (base === '') {
      throw validationError('name', `the identity name must be 1 to ${MAX_NAME - suffixWidth} characters`);
    }
    // The common name comes from a certificate, not a request body: the edge check never saw it.
    checkName('name', base);

    // Logged once the attempt that succeeded has committed.
    const logs: (() => Promise<void> | void)[] = [];
    const afterCommit: AfterCommit = (hook) => void logs.push(hook);
    const create = () =>
      knex.transaction(async (trx) => {
        logs.length = 0;
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
        // After the insert, by the signed content (a re-encoded signature is the same
        // certificate): an identity or authenticator delete that removed this certificate's
        // authenticator holds its row until it commits, so the insert waited for it, and this
        // statement sees the block it wrote. Checked before the insert, that commit could fall
        // between the check and the insert and let the device enroll anew.
        if (await blockedCertificatesRepository.isBlocked(trx, ca.id, cert.tbsSha256)) throw blocked();
        await audit.store(trx, afterCommit, {
          event: 'enrollment.completed',
          identityId,
          method: 'ca',
          caId: ca.id,
          created: true,
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
    for (const log of logs) await log();
    return identityId;
  };
}

export type CaAutoEnrollment = ReturnType<typeof createCaAutoEnrollment>;
