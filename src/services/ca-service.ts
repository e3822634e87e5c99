import type { Knex } from 'knex';
import { mapPage, type ListQuery } from '../db/list-query.js';
import { AppError, validationError } from '../errors/app-error.js';
import { inTransaction } from '../db/transaction.js';
import { constantTimeEqual, newId, newToken } from '../crypto/random.js';
import {
  CertificateError,
  isIssuedBy,
  parseCertificate,
  singleCertificatePem,
  type ParsedCertificate,
} from '../crypto/certificates.js';
import { casRepository, type Ca, type CaChanges } from '../repositories/cas-repository.js';
import type { CaCreateInput, CaUpdateInput } from '../schemas/ca-schemas.js';
import type { CaView } from '../schemas/ca-views.js';
import { checkName } from '../schemas/name-rules.js';
import { enrollmentsRepository } from '../repositories/enrollments-repository.js';
import { DEFAULT_IDENTITY_NAME_FORMAT } from './identity-name-format.js';
import { NO_AUDIT, type AuditTrail } from './audit-trail.js';
import type { IdentityChangeFeed } from './revocation-service.js';

export interface CaServiceDeps {
  knex: Knex;
  /** Publishes writes to what an identity's detail shows (services/revocation-service.ts). */
  changes: IdentityChangeFeed;
  audit?: AuditTrail;
  now?: () => Date;
}

/** The CA detail the API shows (fingerprint, isVerified and verificationToken included). */
export const caView = (ca: Ca): CaView => ({
  id: ca.id,
  name: ca.name,
  certPem: ca.certPem,
  fingerprint: ca.fingerprint,
  isAuthEnabled: ca.isAuthEnabled,
  isOttCaEnrollmentEnabled: ca.isOttCaEnrollmentEnabled,
  isAutoCaEnrollmentEnabled: ca.isAutoCaEnrollmentEnabled,
  identityRoles: ca.identityRoles,
  identityNameFormat: ca.identityNameFormat,
  isVerified: ca.isVerified,
  verificationToken: ca.verificationToken,
  createdAt: ca.createdAt.toISOString(),
  updatedAt: ca.updatedAt.toISOString(),
});

/** One PEM certificate, parsed; anything else is a field error. */
function parseOne(pem: string, field: string): { pem: string; cert: ParsedCertificate } {
  const block = singleCertificatePem(pem);
  if (!block) throw validationError(field, 'must hold exactly one PEM certificate');
  try {
    return { pem: `${block}\n`, cert: parseCertificate(block) };
  } catch (err) {
    if (err instanceof CertificateError) throw validationError(field, 'is not an X.509 certificate');
    throw err;
  }
}

const notFound = () => new AppError('NOT_FOUND', { message: 'no CA with this id' });

const changesOf = (input: CaUpdateInput): CaChanges =>
  Object.fromEntries(Object.entries(input).filter(([k, v]) => v !== undefined && k !== 'certPem'));

/** 3rd-party CAs: registered, then proven by a certificate naming the token. */
export function createCaService({ knex, changes, audit = NO_AUDIT, now = () => new Date() }: CaServiceDeps) {
  return {
    async list(q: ListQuery) {
      return mapPage(await casRepository.list(knex, q), (items) => items.map(caView));
    },

    async get(id: string) {
      const ca = await casRepository.findById(knex, id);
      if (!ca) throw notFound();
      return caView(ca);
    },

    async create(input: CaCreateInput): Promise<string> {
      checkName('name', input.name);
      const { pem, cert } = parseOne(input.certPem, 'certPem');
      if (!cert.isCa) throw validationError('certPem', 'must be a CA certificate (basicConstraints cA)');
      if (cert.notAfter < now()) throw validationError('certPem', 'the CA certificate has expired');
      const id = newId();
      await inTransaction(knex, async (trx, afterCommit) => {
        await audit.store(trx, afterCommit, {
          event: 'ca.created',
          caId: id,
          fingerprint: cert.fingerprint,
        });
        await casRepository.insert(trx, {
          id,
          name: input.name,
          certPem: pem,
          fingerprint: cert.fingerprint,
          isAuthEnabled: input.isAuthEnabled ?? true,
          isOttCaEnrollmentEnabled: input.isOttCaEnrollmentEnabled ?? true,
          isAutoCaEnrollmentEnabled: input.isAutoCaEnrollmentEnabled ?? false,
          identityRoles: input.identityRoles ?? [],
          identityNameFormat: input.identityNameFormat ?? DEFAULT_IDENTITY_NAME_FORMAT,
          // The subject CN of the proof certificate; 32 characters fit any CN.
          verificationToken: newToken(24),
        });
      });
      return id;
    },

    /** PUT and PATCH: the certificate is the CA's identity and cannot change. */
    async update(id: string, input: CaUpdateInput, replace: boolean): Promise<void> {
      const current = await casRepository.findById(knex, id);
      if (!current) throw notFound();
      checkName('name', input.name, current.name);
      if (
        input.certPem !== undefined &&
        parseOne(input.certPem, 'certPem').cert.fingerprint !== current.fingerprint
      ) {
        throw validationError('certPem', 'cannot be changed; register a new CA instead');
      }
      const defaults: CaChanges = replace
        ? {
            isAuthEnabled: true,
            isOttCaEnrollmentEnabled: true,
            isAutoCaEnrollmentEnabled: false,
            identityRoles: [],
            identityNameFormat: DEFAULT_IDENTITY_NAME_FORMAT,
          }
        : {};
      const changed = { ...defaults, ...changesOf(input) };
      const updated = await inTransaction(knex, async (trx, afterCommit) => {
        const row = await casRepository.update(trx, id, changed);
        if (row)
          await audit.store(trx, afterCommit, {
            event: 'ca.updated',
            caId: id,
            fields: Object.keys(changed).sort(),
          });
        return row;
      });
      if (!updated) throw notFound();
    },

    async remove(id: string): Promise<void> {
      // Outstanding OTTCA enrollments go with it (FK cascade): their identities' details change.
      await inTransaction(knex, async (trx, afterCommit) => {
        const holders = await enrollmentsRepository.identitiesWithCa(trx, id);
        if (!(await casRepository.delete(trx, id))) throw notFound();
        for (const identityId of holders) await changes.identityChanged(trx, afterCommit, identityId);
        await audit.store(trx, afterCommit, { event: 'ca.deleted', caId: id });
      });
    },

    /**
     * `POST /cas/{id}/verify`: a certificate signed by the CA whose subject CN is the token. It
     * proves possession of the CA's key and is no client certificate: its extendedKeyUsage may
     * name any purpose.
     */
    async verify(id: string, body: string) {
      const ca = await casRepository.findById(knex, id);
      if (!ca) throw notFound();
      if (ca.isVerified) throw new AppError('CONFLICT', { message: 'the CA is already verified' });
      const { pem, cert } = parseOne(body, 'body');
      if (!(await isIssuedBy(pem, ca.certPem))) {
        throw validationError('body', 'the certificate is not signed by this CA');
      }
      if (!constantTimeEqual(cert.subjectCn ?? '', ca.verificationToken)) {
        throw validationError('body', 'the certificate subject CN must equal the verificationToken');
      }
      const at = now();
      if (cert.notBefore > at || cert.notAfter < at) {
        throw validationError('body', 'the certificate is not valid at this time');
      }
      await inTransaction(knex, async (trx, afterCommit) => {
        if (!(await casRepository.markVerified(trx, id, ca.verificationToken))) throw notFound();
        await audit.store(trx, afterCommit, { event: 'ca.verified', caId: id });
      });
      return caView((await casRepository.findById(knex, id))!);
    },
  };
}

export type CaService = ReturnType<typeof createCaService>;
