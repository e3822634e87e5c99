import type { Knex } from 'knex';
import { inTransaction } from '../db/transaction.js';
import { AppError, validationError } from '../errors/app-error.js';
import {
  certFingerprint,
  certTbsSha256,
  readClientLeaf,
  verifyChain,
  type ClientLeafProblem,
} from '../crypto/certificates.js';
import { hashPassword } from '../crypto/passwords.js';
import { CsrError, signClientCsr } from '../crypto/pki.js';
import { toPem } from '../crypto/pki-keys.js';
import { newId } from '../crypto/random.js';
import { authPoliciesRepository } from '../repositories/auth-policies-repository.js';
import {
  authenticatorsRepository,
  type NewAuthenticator,
} from '../repositories/authenticators-repository.js';
import { blockedCertificatesRepository } from '../repositories/blocked-certificates-repository.js';
import { casRepository } from '../repositories/cas-repository.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import {
  enrollmentsRepository,
  type Enrollment,
  type EnrollmentMethod,
} from '../repositories/enrollments-repository.js';
import { createCaAutoEnrollment } from './ca-auto-enrollment.js';
import type { EnrollmentTokens } from './enrollment-tokens.js';
import { NO_AUDIT, type AuditTrail } from './audit-trail.js';
import type { EnrolledCertificate } from '../schemas/enrollment-views.js';
import type { IdentityChangeFeed } from './revocation-service.js';
import { passwordRuleViolation } from './password-rules.js';
import type { PkiMaterial } from './pki-service.js';

export interface EnrollmentCompletionDeps {
  knex: Knex;
  pki: Pick<PkiMaterial, 'signingCa'>;
  /** SPIFFE trust domain of the URI SAN that names the identity (`config.pki.trustDomain`). */
  trustDomain: string;
  tokens: Pick<EnrollmentTokens, 'lookupHash'>;
  /** Publishes writes to what an identity's detail shows (services/revocation-service.ts). */
  changes: IdentityChangeFeed;
  audit?: AuditTrail;
  now?: () => Date;
}

type Credential = Omit<NewAuthenticator, 'id' | 'identityId' | 'method'>;

const certificateFailed = (message: string) => new AppError('CERTIFICATE_FAILED_VALIDATION', { message });

const LEAF_FAILURES: Record<ClientLeafProblem, string> = {
  unreadable: 'the client certificate cannot be read',
  'ca-certificate': 'a CA certificate cannot be a client certificate',
  'outside-validity': 'the client certificate is expired or not yet valid',
  'not-client-auth': 'the certificate is not for client authentication (extendedKeyUsage)',
};

/**
 * Completing an enrollment on the client API: the token is checked, the
 * credential is prepared, and then — in ONE transaction — the token is consumed by a single
 * DELETE … RETURNING and the authenticator written. Of parallel completions of one token exactly
 * one wins; the others find it gone (INVALID_ENROLLMENT_TOKEN). A refused authenticator (duplicate
 * certificate) rolls the consumption back, so the token stays usable.
 */
export function createEnrollmentCompletion(deps: EnrollmentCompletionDeps) {
  const { knex } = deps;
  const audit = deps.audit ?? NO_AUDIT;
  const now = deps.now ?? (() => new Date());

  type Pending = Enrollment & { tokenHash: string };

  async function pending(token: string, method: EnrollmentMethod): Promise<Pending> {
    const tokenHash = deps.tokens.lookupHash(token);
    const enrollment = await enrollmentsRepository.findByTokenHash(knex, tokenHash);
    if (!enrollment) throw new AppError('INVALID_ENROLLMENT_TOKEN');
    if (enrollment.method !== method) throw new AppError('INVALID_ENROLL_METHOD');
    if (enrollment.expiresAt <= now()) throw new AppError('ENROLLMENT_EXPIRED');
    return { ...enrollment, tokenHash };
  }

  async function consumeInto(e: Pending, credential: Credential): Promise<void> {
    await inTransaction(knex, async (trx, afterCommit) => {
      // The identity first, as its deletion takes it (FOR UPDATE) before the enrollment it
      // cascades to: the other order deadlocks with a deletion in flight.
      if (!(await identitiesRepository.holdAgainstDelete(trx, e.identityId)))
        throw new AppError('INVALID_ENROLLMENT_TOKEN');
      const consumed = await enrollmentsRepository.consume(trx, e.tokenHash, {
        method: e.method,
        validAt: now(),
      });
      if (!consumed) throw new AppError('INVALID_ENROLLMENT_TOKEN');
      const authenticatorId = newId();
      const method = e.method === 'updb' ? 'updb' : 'cert';
      await authenticatorsRepository.insert(trx, {
        id: authenticatorId,
        identityId: consumed.identityId,
        method,
        ...credential,
      });
      // As at auto enrollment, after the insert: a delete that blocks this certificate and is
      // still in flight holds its row, so the check sees the block once that commits.
      const { caId, certTbsSha256: tbs } = credential;
      if (caId && tbs && (await blockedCertificatesRepository.isBlocked(trx, caId, tbs)))
        throw certificateFailed('this certificate is blocked at its CA (an admin can lift the block)');
      await deps.changes.identityChanged(trx, afterCommit, consumed.identityId);
      await audit.store(trx, afterCommit, {
        event: 'enrollment.completed',
        enrollmentId: consumed.id,
        identityId: consumed.identityId,
        method: e.method,
      });
      await audit.store(trx, afterCommit, {
        event: 'authenticator.created',
        authenticatorId,
        identityId: consumed.identityId,
        method,
      });
    });
  }

  async function passwordRulesOf(identityId: string) {
    const identity = await identitiesRepository.findById(knex, identityId);
    const policy = identity && (await authPoliciesRepository.findById(knex, identity.authPolicyId));
    if (!policy) throw new AppError('INVALID_ENROLLMENT_TOKEN');
    return policy.primary.updb;
  }

  return {
    /** Auto CA enrollment: no token; the certificate's verified CA creates the identity. */
    ca: createCaAutoEnrollment({ knex, audit, now }),

    /** UPDB: the username fixed at creation, the password checked against the policy's rules. */
    async updb(token: string, password: string): Promise<void> {
      const enrollment = await pending(token, 'updb');
      const violation = passwordRuleViolation(await passwordRulesOf(enrollment.identityId), password);
      if (violation) throw validationError('password', violation);
      await consumeInto(enrollment, {
        username: enrollment.username,
        passwordHash: await hashPassword(password),
      });
    },

    /** OTT: signs the CSR with our signing CA; returns the chain (leaf, then the signing CA). */
    async ott(token: string, csrPem: string): Promise<EnrolledCertificate> {
      const enrollment = await pending(token, 'ott');
      let leafPem: string;
      try {
        leafPem = await signClientCsr(deps.pki.signingCa, {
          csrPem,
          identityId: enrollment.identityId,
          trustDomain: deps.trustDomain,
        });
      } catch (err) {
        if (err instanceof CsrError) throw validationError('clientCsr', err.message);
        throw err;
      }
      await consumeInto(enrollment, {
        certFingerprint: certFingerprint(leafPem),
        certTbsSha256: certTbsSha256(leafPem),
        certPem: leafPem,
        // Our own PKI issued it, so it can be extended later (the `z_ice` claim).
        isExtendable: true,
      });
      return { cert: leafPem + deps.pki.signingCa.certPem };
    },

    /** OTTCA: the TLS client certificate (DER chain, leaf first) must come from the enrollment's CA. */
    async ottca(token: string, peerChain: Buffer[]): Promise<void> {
      const enrollment = await pending(token, 'ottca');
      const ca = enrollment.caId ? await casRepository.findById(knex, enrollment.caId) : undefined;
      if (!ca || !ca.isVerified || !ca.isOttCaEnrollmentEnabled)
        throw new AppError('ENROLLMENT_CA_NOT_VALID');
      const [leaf, ...intermediates] = peerChain;
      if (!leaf) throw certificateFailed('a client certificate issued by the enrollment CA is required');
      const at = now();
      const { problem } = readClientLeaf(leaf, at);
      if (problem) throw certificateFailed(LEAF_FAILURES[problem]);
      const chained = await verifyChain(
        leaf,
        intermediates.map((der) => toPem('CERTIFICATE', der)),
        [ca.certPem],
        at,
      ).catch(() => false);
      if (!chained) throw certificateFailed('the client certificate was not issued by the enrollment CA');
      await consumeInto(enrollment, {
        certFingerprint: certFingerprint(leaf),
        certTbsSha256: certTbsSha256(leaf),
        certPem: toPem('CERTIFICATE', leaf),
        caId: ca.id,
      });
    },
  };
}

export type EnrollmentCompletion = ReturnType<typeof createEnrollmentCompletion>;
