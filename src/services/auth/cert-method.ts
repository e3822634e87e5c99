import { toPem } from '../../crypto/pki-keys.js';
import type { Knex } from 'knex';
import { AppError } from '../../errors/app-error.js';
import {
  CertificateError,
  readClientLeaf,
  splitPemBundle,
  verifyChain,
  type ClientLeafProblem,
} from '../../crypto/certificates.js';
import {
  authenticatorsRepository,
  type Authenticator,
} from '../../repositories/authenticators-repository.js';
import { casRepository } from '../../repositories/cas-repository.js';
import { identitiesRepository } from '../../repositories/identities-repository.js';
import type { PkiMaterial } from '../pki-service.js';
import { isDisabled } from './identity-status.js';
import { certX5tS256 } from '../../crypto/connection-certificate.js';
import type { PrimaryAuthResult } from './primary-result.js';

export interface CertMethodDeps {
  knex: Knex;
  pki: Pick<PkiMaterial, 'signingCa'>;
  now?: () => Date;
}

const invalidAuth = (detail: string) => new AppError('INVALID_AUTH', { detail });

const LEAF_REFUSALS: Record<ClientLeafProblem, string> = {
  unreadable: 'unparseable client certificate',
  'ca-certificate': 'a CA certificate is not a client certificate',
  'outside-validity': 'certificate expired or not yet valid', // not asked: the policy decides
  'not-client-auth': 'certificate not for client authentication',
};

/**
 * Client-certificate authentication. The leaf must chain to our signing CA
 * or to a verified, auth-enabled 3rd-party CA, every certificate above it valid now, and be
 * enrolled (a `cert` authenticator with its fingerprint, or with its tbsCertificate hash: a copy
 * whose signature was re-encoded is signed by the same CA over the same content and key, so it is
 * the same certificate of the same identity). A certificate of an auto-enrolling CA logs in only
 * after `POST /enroll?method=ca` bound it to an identity, as in OpenZiti. Every refusal is the
 * same 401 INVALID_AUTH.
 */
export function createCertMethod({ knex, pki, now = () => new Date() }: CertMethodDeps) {
  const ourCas = splitPemBundle(pki.signingCa.certPem);

  /** Whether the chain is trusted for this authenticator, and whether by our own PKI. */
  async function trust(leaf: Buffer, intermediates: string[], authenticator: Authenticator, at: Date) {
    if (authenticator.caId === null && (await verifyChain(leaf, intermediates, ourCas, at)))
      return { ours: true };
    // Only verified, auth-enabled CAs authenticate anyone: an unproven CA could be anyone's.
    const cas = (await casRepository.listAuthEnabled(knex)).filter(
      (ca) => authenticator.caId === null || ca.id === authenticator.caId,
    );
    for (const ca of cas) {
      if (await verifyChain(leaf, intermediates, [ca.certPem], at)) return { ours: false };
    }
    return undefined;
  }

  return async function authenticateCertificate(chain: Buffer[]): Promise<PrimaryAuthResult> {
    const [leaf, ...rest] = chain;
    if (!leaf) throw invalidAuth('no client certificate');
    // Without a date: the policy decides below whether an expired certificate may log in.
    const { cert, problem } = readClientLeaf(leaf);
    if (problem) throw invalidAuth(LEAF_REFUSALS[problem]);
    const authenticator = await authenticatorsRepository.findByCertificate(knex, cert);
    if (!authenticator) throw invalidAuth('certificate not enrolled');
    const at = now();
    // A peer-supplied intermediate that cannot be parsed makes the chain untrusted, not a 500.
    const trusted = await trust(
      leaf,
      rest.map((der) => toPem('CERTIFICATE', der)),
      authenticator,
      at,
    ).catch((err: unknown) => {
      if (err instanceof CertificateError) return undefined;
      throw err;
    });
    if (!trusted) throw invalidAuth('certificate chain not trusted');

    const found = await identitiesRepository.findWithPolicy(knex, authenticator.identityId);
    if (!found) throw invalidAuth('identity vanished');
    const { identity, policy } = found;
    if (!policy.primary.cert.allowed) throw invalidAuth('policy does not allow cert');
    if (cert.notBefore > at) throw invalidAuth('certificate not yet valid');
    if (cert.notAfter < at && !policy.primary.cert.allowExpiredCerts)
      throw invalidAuth('certificate expired');
    if (isDisabled(identity, at)) throw invalidAuth('identity disabled or locked');
    // z_ice: only a certificate of our own PKI can be extended by us.
    return {
      identity,
      policy,
      amr: ['cert'],
      isCertExtendable: trusted.ours,
      certX5tS256: certX5tS256(leaf),
    };
  };
}

export type CertMethod = ReturnType<typeof createCertMethod>;
