import { z } from 'zod';
import { booleanField, boundedInt, idRef, nonEmpty, stringList } from './schema-fields.js';
import type { ListFields } from './list-filter.js';
import { listQueryParser } from './list-query.js';
import { strictBody } from './strict-body.js';

/**
 * Auth policy bodies. Every member is optional here: create and PUT fill the
 * gaps from a fresh default policy, PATCH from the stored one (policy-service.ts). Every level is
 * strict so that a misspelt member is an error rather than silently ignored; only OpenZiti's
 * `tags`, which this service does not keep for policies, is accepted and dropped.
 */

const bool = booleanField.optional();
// A year of lockout and ten thousand attempts are far past any sensible policy; both fit `integer`.
const MAX_LOCKOUT_MINUTES = 366 * 24 * 60;
const MAX_ATTEMPTS = 10_000;
const MAX_PASSWORD_LENGTH = 1024; // the longest password a login accepts (authenticate-schemas.ts)
// Far past any sensible number of parallel sessions of one identity; fits `integer`.
const MAX_SESSIONS = 10_000;

const signerRef = z.union([idRef, z.null()]).optional();

const primary = z
  .object({
    cert: z.object({ allowed: bool, allowExpiredCerts: bool, bindTokens: bool }).strict().optional(),
    updb: z
      .object({
        allowed: bool,
        minPasswordLength: boundedInt(1, MAX_PASSWORD_LENGTH).optional(),
        requireSpecialChar: bool,
        requireNumberChar: bool,
        requireMixedCase: bool,
        maxAttempts: boundedInt(0, MAX_ATTEMPTS).optional(),
        lockoutDurationMinutes: boundedInt(0, MAX_LOCKOUT_MINUTES).optional(),
      })
      .strict()
      .optional(),
    extJwt: z
      .object({ allowed: bool, allowedSigners: stringList(100) })
      .strict()
      .optional(),
    passkey: z.object({ allowed: bool }).strict().optional(),
  })
  .strict()
  .optional();

/**
 * `requireExtJwt` is the field's name in every answer and in the OpenAPI document;
 * `requireExtJwtSigner` (the name the principal and the column use) is accepted as its alias on
 * input, and when both are given they must name the same signer.
 */
const secondary = z
  .object({
    requireTotp: bool,
    requireExtJwt: signerRef,
    requireExtJwtSigner: signerRef,
    requirePasskey: bool,
  })
  .strict()
  .optional()
  .transform((s, ctx) => {
    if (s === undefined) return undefined;
    const { requireExtJwtSigner: alias, ...rest } = s;
    if (alias !== undefined && rest.requireExtJwt !== undefined && alias !== rest.requireExtJwt) {
      ctx.addIssue({
        code: 'custom',
        path: ['requireExtJwt'],
        message: 'requireExtJwt and its alias requireExtJwtSigner differ',
      });
      return z.NEVER;
    }
    return { ...rest, requireExtJwt: rest.requireExtJwt !== undefined ? rest.requireExtJwt : alias };
  });

/** What a login over the session limit does: end the oldest session, or be refused. */
export const SESSION_LIMIT_ACTIONS = ['evictOldest', 'refuse'] as const;

/** The concurrent-session limit: `max` 0 is no limit (docs/operations.md, "Session limit"). */
const sessions = z
  .object({
    max: boundedInt(0, MAX_SESSIONS).optional(),
    onLimit: z.enum(SESSION_LIMIT_ACTIONS).optional(),
  })
  .strict()
  .optional();

const members = { primary, secondary, sessions };

export const POLICY_IGNORED_MEMBERS = ['tags'] as const;

export const policyCreateSchema = strictBody({ name: nonEmpty(255), ...members }, POLICY_IGNORED_MEMBERS);
export const policyPatchSchema = strictBody(
  { name: nonEmpty(255).optional(), ...members },
  POLICY_IGNORED_MEMBERS,
);

/** What create, PUT and PATCH hand the service: a partial policy. */
export type PolicyPatch = z.output<typeof policyPatchSchema>;

/** API field → column, for list filters and sorting. */
export const authPolicyListFields = {
  id: { column: 'id', type: 'string' },
  name: { column: 'name', type: 'string' },
  createdAt: { column: 'created_at', type: 'datetime' },
  updatedAt: { column: 'updated_at', type: 'datetime' },
} satisfies ListFields;

export const parsePolicyList = listQueryParser(authPolicyListFields, 'name');
