import type { Knex } from 'knex';
import { mapPage, type ListQuery } from '../db/list-query.js';
import type { Db } from '../db/create-database.js';
import { advisoryXactLock } from '../db/advisory-xact-lock.js';
import { inTransaction } from '../db/transaction.js';
import { AppError, validationError } from '../errors/app-error.js';
import { newId, newToken } from '../crypto/random.js';
import { identitiesRepository } from '../repositories/identities-repository.js';
import { authenticatorsRepository } from '../repositories/authenticators-repository.js';
import { casRepository } from '../repositories/cas-repository.js';
import {
  enrollmentsRepository,
  type Enrollment,
  type EnrollmentMethod,
} from '../repositories/enrollments-repository.js';
import type { EnrollmentCreateInput } from '../schemas/enrollment-schemas.js';
import type { EnrollmentView } from '../schemas/enrollment-views.js';
import type { EnrollmentTokens, OpenEnrollment } from './enrollment-tokens.js';
import { NO_AUDIT, type AuditTrail } from './audit-trail.js';
import type { IdentityChangeFeed } from './revocation-service.js';

export interface EnrollmentServiceDeps {
  knex: Knex;
  /** `edge.enrollment.duration` in seconds (default 180m). */
  enrollmentDuration: number;
  signJwt: (enrollment: OpenEnrollment) => Promise<string>;
  tokens: Pick<EnrollmentTokens, 'protect' | 'open'>;
  /** Publishes writes to what an identity's detail shows (services/revocation-service.ts). */
  changes: IdentityChangeFeed;
  audit?: AuditTrail;
  now?: () => Date;
}

/** One enrollment to add: `field` names the request member that errors should point at. */
export interface EnrollmentSpec {
  identityId: string;
  method: EnrollmentMethod;
  caId?: string;
  username?: string;
  expiresAt?: Date;
  /** Request field names for errors: `enrollment.updb` on identity create, `username` here. */
  fields?: { caId?: string; username?: string };
}

/** ott and ottca both end in the identity's one `cert` authenticator; updb in its `updb` one. */
const authenticatorKind = (m: EnrollmentMethod) => (m === 'updb' ? 'updb' : 'cert');

const conflict = (field: string, reason: string) => new AppError('CONFLICT', { cause: { field, reason } });
const notFound = (field: string, reason: string) => new AppError('NOT_FOUND', { cause: { field, reason } });

async function assertNoOtherCredential(trx: Db, spec: EnrollmentSpec): Promise<void> {
  const kind = authenticatorKind(spec.method);
  const authenticators = await authenticatorsRepository.listForIdentity(trx, spec.identityId);
  if (authenticators.some((a) => a.method === kind)) {
    throw conflict('method', `the identity already has a ${kind} authenticator`);
  }
  const pending = await enrollmentsRepository.listForIdentity(trx, spec.identityId);
  const same = pending.find((e) => authenticatorKind(e.method) === kind);
  if (same) throw conflict('method', `the identity already has a pending ${same.method} enrollment`);
}

/**
 * A UPDB username is reserved from enrollment creation on (its authenticator takes it at
 * completion). The per-username advisory lock serializes concurrent creations, so the check below
 * sees any reservation committed before it.
 */
async function assertUsernameFree(trx: Db, username: string, field: string): Promise<void> {
  await advisoryXactLock(trx, { name: `svc:updb-username:${username}` });
  const taken =
    (await authenticatorsRepository.findByUsername(trx, username)) !== undefined ||
    (await enrollmentsRepository.isUsernameReserved(trx, username));
  if (taken) throw conflict(field, 'the username is taken');
}

/** Management of enrollments: `/enrollments` and the enrollment of a new identity. */
export function createEnrollmentService(deps: EnrollmentServiceDeps) {
  const { knex } = deps;
  const audit = deps.audit ?? NO_AUDIT;
  const now = deps.now ?? (() => new Date());

  /**
   * Writes one enrollment inside the caller's transaction, after every check (method, CA, username, one per
   * method).
   */
  async function addInTransaction(trx: Db, spec: EnrollmentSpec): Promise<Enrollment> {
    const expiresAt = spec.expiresAt ?? new Date(now().getTime() + deps.enrollmentDuration * 1000);
    if (expiresAt <= now()) throw validationError('expiresAt', 'must be in the future');
    await assertNoOtherCredential(trx, spec);
    if (spec.method === 'ottca' && !(await casRepository.findById(trx, spec.caId ?? ''))) {
      throw notFound(spec.fields?.caId ?? 'caId', 'no such CA');
    }
    if (spec.method === 'updb') {
      await assertUsernameFree(trx, spec.username ?? '', spec.fields?.username ?? 'username');
    }
    return enrollmentsRepository.insert(trx, {
      id: newId(),
      identityId: spec.identityId,
      method: spec.method,
      ...deps.tokens.protect(newToken()),
      username: spec.method === 'updb' ? (spec.username ?? null) : null,
      caId: spec.method === 'ottca' ? (spec.caId ?? null) : null,
      expiresAt,
    });
  }

  async function view(stored: Enrollment): Promise<EnrollmentView> {
    const e = deps.tokens.open(stored);
    return {
      id: e.id,
      identityId: e.identityId,
      method: e.method,
      token: e.token,
      jwt: await deps.signJwt(e),
      expiresAt: e.expiresAt.toISOString(),
      ...(e.username !== null ? { username: e.username } : {}),
      ...(e.caId !== null ? { caId: e.caId } : {}),
      createdAt: e.createdAt.toISOString(),
    };
  }

  async function found(id: string): Promise<Enrollment> {
    const enrollment = await enrollmentsRepository.findById(knex, id);
    if (!enrollment) throw new AppError('NOT_FOUND');
    return enrollment;
  }

  return {
    addInTransaction,

    async create(input: EnrollmentCreateInput): Promise<Enrollment> {
      return inTransaction(knex, async (trx, afterCommit) => {
        // The row lock orders this against other enrollments and deletion of the same identity.
        const identity = await identitiesRepository.findByIdForUpdate(trx, input.identityId);
        if (!identity) throw notFound('identityId', 'no such identity');
        const added = await addInTransaction(trx, input);
        await deps.changes.identityChanged(trx, afterCommit, input.identityId);
        await audit.store(trx, afterCommit, {
          event: 'enrollment.created',
          enrollmentId: added.id,
          identityId: input.identityId,
          method: input.method,
        });
        return added;
      });
    },

    async list(q: ListQuery) {
      return mapPage(await enrollmentsRepository.list(knex, q), (items) => Promise.all(items.map(view)));
    },

    async get(id: string) {
      return view(await found(id));
    },

    async delete(id: string): Promise<void> {
      await inTransaction(knex, async (trx, afterCommit) => {
        const deleted = await enrollmentsRepository.delete(trx, id);
        if (!deleted) throw new AppError('NOT_FOUND');
        await deps.changes.identityChanged(trx, afterCommit, deleted.identityId);
        await audit.store(trx, afterCommit, {
          event: 'enrollment.deleted',
          enrollmentId: id,
          identityId: deleted.identityId,
        });
      });
    },

    /** New expiry, same token: the JWT shown for it changes with its `exp`. */
    async refresh(id: string, expiresAt: Date): Promise<void> {
      if (expiresAt <= now()) throw validationError('expiresAt', 'must be in the future');
      await inTransaction(knex, async (trx, afterCommit) => {
        const updated = await enrollmentsRepository.updateExpiry(trx, id, expiresAt);
        if (!updated) throw new AppError('NOT_FOUND');
        await deps.changes.identityChanged(trx, afterCommit, updated.identityId);
        await audit.store(trx, afterCommit, {
          event: 'enrollment.refreshed',
          enrollmentId: id,
          identityId: updated.identityId,
          expiresAt: expiresAt.toISOString(),
        });
      });
    },
  };
}

export type EnrollmentService = ReturnType<typeof createEnrollmentService>;
