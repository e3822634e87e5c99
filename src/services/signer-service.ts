import type { Knex } from 'knex';
import type { ListQuery } from '../db/list-query.js';
import { AppError, validationError } from '../errors/app-error.js';
import { inTransaction } from '../db/transaction.js';
import { newId } from '../crypto/random.js';
import { CertificateError, parseCertificate, singleCertificatePem } from '../crypto/certificates.js';
import { authPoliciesRepository } from '../repositories/auth-policies-repository.js';
import {
  externalJwtSignersRepository,
  type ExternalJwtSigner,
  type ExternalJwtSignerInput,
} from '../repositories/external-jwt-signers-repository.js';
import { checkName } from '../schemas/name-rules.js';
import type { SignerPatch } from '../schemas/signer-schemas.js';
import { NO_AUDIT, type AuditTrail } from './audit-trail.js';
import type { PublicSignerView, SignerView } from '../schemas/signer-views.js';

export interface SignerServiceDeps {
  knex: Knex;
  audit?: AuditTrail;
  now?: () => Date;
}

/** Defaults: claim `sub`, matched against the identity's `externalId`; JWTs living at most a day. */
const SIGNER_DEFAULTS: Omit<ExternalJwtSignerInput, 'name' | 'issuer'> = {
  enabled: true,
  audience: null,
  certPem: null,
  jwksEndpoint: null,
  kid: null,
  claimsProperty: 'sub',
  useExternalId: true,
  externalAuthUrl: null,
  clientId: null,
  scopes: [],
  maxTokenLifetimeMinutes: 1440,
};

type SignerBase = Omit<ExternalJwtSignerInput, 'name' | 'issuer'> & { name?: string; issuer?: string };

function merge(base: SignerBase, patch: SignerPatch): ExternalJwtSignerInput {
  const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
  const merged = { ...base, ...defined } as SignerBase;
  return { ...merged, name: merged.name ?? '', issuer: merged.issuer ?? '' };
}

/** The one-key form must hold exactly one X.509 certificate that is valid today. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The rules over the whole signer: an audience, always checked (a JWT the IdP issued to another
 * application must not log in here); exactly one key source; a JWKS over https (plain http
 * only on the loopback interface, where nobody can intercept it); a current certificate.
 */
function checkKeySource(s: ExternalJwtSignerInput, now: Date): ExternalJwtSignerInput {
  if (s.audience === null)
    throw validationError('audience', 'is required: the audience the signer issues JWTs for');
  if ((s.certPem === null) === (s.jwksEndpoint === null)) {
    throw validationError('certPem', 'exactly one of certPem and jwksEndpoint must be given');
  }
  if (s.jwksEndpoint !== null) {
    const url = new URL(s.jwksEndpoint);
    if (url.protocol !== 'https:' && !LOOPBACK.has(url.hostname)) {
      throw validationError('jwksEndpoint', 'must be an https URL (http only on the loopback interface)');
    }
    return s;
  }
  const block = singleCertificatePem(s.certPem!);
  if (!block) throw validationError('certPem', 'must hold exactly one PEM certificate');
  try {
    const cert = parseCertificate(block);
    if (cert.notAfter < now) throw validationError('certPem', 'the certificate has expired');
  } catch (err) {
    if (err instanceof CertificateError) throw validationError('certPem', 'is not an X.509 certificate');
    throw err;
  }
  return { ...s, certPem: `${block}\n` };
}

/** Management view: every field, key material included (admins only). */
export const signerView = (s: ExternalJwtSigner): SignerView => ({
  ...s,
  createdAt: s.createdAt.toISOString(),
  updatedAt: s.updatedAt.toISOString(),
});

/** The anonymous client view: what a client needs to start the IdP flow. */
export const publicSignerView = (s: ExternalJwtSigner): PublicSignerView => ({
  id: s.id,
  name: s.name,
  issuer: s.issuer,
  externalAuthUrl: s.externalAuthUrl,
  clientId: s.clientId,
  scopes: s.scopes,
});

const notFound = () => new AppError('NOT_FOUND', { message: 'no external JWT signer with this id' });
const inUse = () =>
  new AppError('CONFLICT', { message: 'the external JWT signer is named by at least one auth policy' });

/** External JWT signers CRUD. */
export function createSignerService({ knex, audit = NO_AUDIT, now = () => new Date() }: SignerServiceDeps) {
  async function update(id: string, build: (current: ExternalJwtSigner) => ExternalJwtSignerInput) {
    await inTransaction(knex, async (trx, afterCommit) => {
      const current = await externalJwtSignersRepository.findForUpdate(trx, id);
      if (!current) throw notFound();
      const next = checkKeySource(build(current), now());
      checkName('name', next.name, current.name);
      await externalJwtSignersRepository.update(trx, id, next);
      await audit.store(trx, afterCommit, { event: 'signer.updated', signerId: id, enabled: next.enabled });
    });
  }

  return {
    async list(q: ListQuery, onlyEnabled = false) {
      return externalJwtSignersRepository.list(knex, q, onlyEnabled);
    },

    async get(id: string): Promise<ExternalJwtSigner> {
      const signer = await externalJwtSignersRepository.findById(knex, id);
      if (!signer) throw notFound();
      return signer;
    },

    async create(patch: SignerPatch): Promise<string> {
      const id = newId();
      const signer = checkKeySource(merge(SIGNER_DEFAULTS, patch), now());
      checkName('name', signer.name);
      await inTransaction(knex, async (trx, afterCommit) => {
        await externalJwtSignersRepository.insert(trx, id, signer);
        await audit.store(trx, afterCommit, {
          event: 'signer.created',
          signerId: id,
          issuer: signer.issuer,
        });
      });
      return id;
    },

    /** PUT: omitted members take the defaults, as on create. */
    replace: (id: string, patch: SignerPatch) => update(id, () => merge(SIGNER_DEFAULTS, patch)),

    patch: (id: string, patch: SignerPatch) => update(id, (current) => merge(current, patch)),

    async remove(id: string): Promise<void> {
      await inTransaction(
        knex,
        async (trx, afterCommit) => {
          if (!(await externalJwtSignersRepository.findById(trx, id))) throw notFound();
          if (await authPoliciesRepository.usesSigner(trx, id)) throw inUse();
          await externalJwtSignersRepository.delete(trx, id);
          await audit.store(trx, afterCommit, { event: 'signer.deleted', signerId: id });
        },
        { removes: true },
      );
    },
  };
}

export type SignerService = ReturnType<typeof createSignerService>;
