import { AppError } from '../errors/app-error.js';
import { isForeignKeyViolation, isUniqueViolation, type PgError } from './db-errors.js';

/** The client error one violated constraint stands for. */
export interface ConstraintAnswer {
  code: 'CONFLICT' | 'NOT_FOUND';
  message?: string;
  /** With `reason`: the request field to blame, sent as the error's cause. */
  field?: string;
  reason?: string;
}

/**
 * A foreign key fails two ways: a write names a row that does not exist (`missing`), or a delete
 * removes a row that others still name (`referenced`). PostgreSQL tells the two apart only in its
 * localised message text, so the writer says which kind of write it is (`removes`).
 */
type Answers = { unique: ConstraintAnswer } | { missing?: ConstraintAnswer; referenced?: ConstraintAnswer };

const signerMissing: ConstraintAnswer = {
  code: 'NOT_FOUND',
  message: 'an external JWT signer named by the policy does not exist',
};
const signerReferenced: ConstraintAnswer = {
  code: 'CONFLICT',
  message: 'the external JWT signer is named by at least one auth policy',
};
const identityGone: ConstraintAnswer = { code: 'NOT_FOUND', message: 'the identity no longer exists' };
const noSuchIdentity: ConstraintAnswer = {
  code: 'NOT_FOUND',
  field: 'identityId',
  reason: 'no such identity',
};

/**
 * Every constraint a client can violate, and the error it means: bad input is a 409 or a 404
 * naming the field, never a 500. Checks made before writing give the same answers; these
 * catch the races between such a check and the write. Names follow `<table>__<cols>_<kind>`.
 */
const CONSTRAINTS: Record<string, Answers> = {
  identities__name_unique: {
    unique: { code: 'CONFLICT', field: 'name', reason: 'an identity with this name exists' },
  },
  identities__external_id_unique: {
    unique: { code: 'CONFLICT', field: 'externalId', reason: 'an identity with this externalId exists' },
  },
  identities__auth_policy_id_fk: {
    missing: { code: 'NOT_FOUND', field: 'authPolicyId', reason: 'no such auth policy' },
    referenced: { code: 'CONFLICT', message: 'the auth policy is in use by at least one identity' },
  },
  enrollments__identity_id_method_unique: {
    unique: {
      code: 'CONFLICT',
      field: 'method',
      reason: 'the identity already has an enrollment of this method',
    },
  },
  enrollments__identity_id_fk: { missing: noSuchIdentity },
  enrollments__ca_id_fk: { missing: { code: 'NOT_FOUND', field: 'caId', reason: 'no such CA' } },
  authenticators__username_unique: {
    unique: { code: 'CONFLICT', field: 'username', reason: 'the username is taken' },
  },
  authenticators__cert_fingerprint_unique: {
    unique: { code: 'CONFLICT', field: 'fingerprint', reason: 'the certificate is already in use' },
  },
  // Another encoding of a certificate already enrolled (its tbsCertificate hash is taken).
  authenticators__cert_tbs_sha256_unique: {
    unique: { code: 'CONFLICT', field: 'fingerprint', reason: 'the certificate is already in use' },
  },
  authenticators__identity_id_method_unique: {
    unique: {
      code: 'CONFLICT',
      field: 'method',
      reason: 'the identity already has an authenticator of this kind',
    },
  },
  authenticators__identity_id_fk: { missing: noSuchIdentity },
  auth_policies__name_unique: {
    unique: { code: 'CONFLICT', field: 'name', reason: 'an auth policy with this name exists' },
  },
  auth_policies__secondary_require_ext_jwt_signer_id_fk: {
    missing: signerMissing,
    referenced: signerReferenced,
  },
  auth_policy_allowed_signers__signer_id_fk: { missing: signerMissing, referenced: signerReferenced },
  external_jwt_signers__name_unique: {
    unique: { code: 'CONFLICT', field: 'name', reason: 'a signer with this name exists' },
  },
  external_jwt_signers__issuer_unique: {
    unique: { code: 'CONFLICT', field: 'issuer', reason: 'a signer with this issuer exists' },
  },
  cas__name_unique: { unique: { code: 'CONFLICT', field: 'name', reason: 'a CA with this name exists' } },
  cas__fingerprint_unique: {
    unique: { code: 'CONFLICT', field: 'certPem', reason: 'this CA certificate is registered' },
  },
  mfa_totp__identity_id_fk: { missing: identityGone },
  mfa_recovery_codes__identity_id_fk: { missing: identityGone },
  passkeys__credential_id_unique: {
    unique: { code: 'CONFLICT', field: 'response', reason: 'this passkey is already registered' },
  },
  passkeys__identity_id_fk: { missing: identityGone },
  webauthn_user_handles__identity_id_fk: { missing: identityGone },
  webauthn_challenges__identity_id_fk: { missing: identityGone },
  webhooks__name_unique: {
    unique: { code: 'CONFLICT', field: 'name', reason: 'a webhook with this name exists' },
  },
};

function answerFor(err: unknown, removes: boolean): ConstraintAnswer | undefined {
  const constraint = (err as PgError | undefined)?.constraint;
  if (constraint === undefined || !Object.hasOwn(CONSTRAINTS, constraint)) return undefined;
  const answers = CONSTRAINTS[constraint]!;
  if ('unique' in answers) return isUniqueViolation(err) ? answers.unique : undefined;
  if (!isForeignKeyViolation(err)) return undefined;
  return removes ? answers.referenced : answers.missing;
}

/** The AppError a known constraint violation stands for; any other error is returned as it is. */
export function constraintError(err: unknown, { removes = false } = {}): unknown {
  const answer = answerFor(err, removes);
  if (!answer) return err;
  const { code, message, field, reason } = answer;
  return new AppError(code, {
    ...(message !== undefined && { message }),
    ...(field !== undefined && { cause: { field, reason } }),
  });
}

/** Runs `work` and turns known constraint violations into AppErrors. */
export async function withConstraintErrors<T>(
  work: () => Promise<T>,
  options: { removes?: boolean } = {},
): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw constraintError(err, options);
  }
}
