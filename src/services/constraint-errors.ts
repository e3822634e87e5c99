import { AppError } from '../errors/app-error.js';
import { isForeignKeyViolation, isUniqueViolation, type PgError } from '../db/db-errors.js';

interface Answer {
  code: 'CONFLICT' | 'NOT_FOUND';
  field: string;
  reason: string;
}

/**
 * Constraint violations of the identity tables and the client error each one means. Checks made
 * before writing give the same answers; these catch the races between such a check and the write
 * (decisions.md §2: duplicates are 409 or a field error, never a 500).
 */
const ANSWERS: Record<string, Answer> = {
  identities__name_unique: { code: 'CONFLICT', field: 'name', reason: 'an identity with this name exists' },
  identities__external_id_unique: {
    code: 'CONFLICT',
    field: 'externalId',
    reason: 'an identity with this externalId exists',
  },
  identities__auth_policy_id_fk: { code: 'NOT_FOUND', field: 'authPolicyId', reason: 'no such auth policy' },
  enrollments__identity_id_method_unique: {
    code: 'CONFLICT',
    field: 'method',
    reason: 'the identity already has an enrollment of this method',
  },
  enrollments__identity_id_fk: { code: 'NOT_FOUND', field: 'identityId', reason: 'no such identity' },
  enrollments__ca_id_fk: { code: 'NOT_FOUND', field: 'caId', reason: 'no such CA' },
  authenticators__username_unique: {
    code: 'CONFLICT',
    field: 'username',
    reason: 'the username is taken',
  },
  authenticators__cert_fingerprint_unique: {
    code: 'CONFLICT',
    field: 'fingerprint',
    reason: 'the certificate is already in use',
  },
  authenticators__identity_id_method_unique: {
    code: 'CONFLICT',
    field: 'method',
    reason: 'the identity already has an authenticator of this kind',
  },
  authenticators__identity_id_fk: { code: 'NOT_FOUND', field: 'identityId', reason: 'no such identity' },
};

/** Runs `work` (usually a whole transaction) and turns known constraint violations into AppErrors. */
export async function withConstraintErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const constraint = (err as PgError)?.constraint;
    const answer =
      constraint !== undefined && Object.hasOwn(ANSWERS, constraint) ? ANSWERS[constraint] : undefined;
    if (answer && (isUniqueViolation(err) || isForeignKeyViolation(err))) {
      throw new AppError(answer.code, { cause: { field: answer.field, reason: answer.reason } });
    }
    throw err;
  }
}
