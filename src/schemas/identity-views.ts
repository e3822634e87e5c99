import { z } from 'zod';
import { IDENTITY_PERMISSIONS, IDENTITY_TYPES } from './identity-schemas.js';
import { count, instant, stringList, timestamps } from './view-fields.js';

/** An open enrollment as the identity detail shows it, under its method. */
const identityEnrollmentSchema = z.object({
  id: z.string(),
  token: z.string(),
  jwt: z.string(),
  expiresAt: instant,
  username: z.string().optional(),
  caId: z.string().optional(),
});

export const identityAuthenticatorsSchema = z.object({
  updb: z.object({ id: z.string(), username: z.string().nullable() }).optional(),
  cert: z
    .object({
      id: z.string(),
      fingerprint: z.string().nullable().describe('lowercase SHA-1 hex of the DER'),
    })
    .optional(),
});

export const identityEnrollmentsSchema = z.object({
  ott: identityEnrollmentSchema.optional(),
  ottca: identityEnrollmentSchema.optional(),
  updb: identityEnrollmentSchema.optional(),
});

/** The identity detail, with its authenticators and open enrollments. */
export const identityDetailSchema = z.object({
  id: z.string(),
  name: z.string(),
  type: z.enum(IDENTITY_TYPES),
  isAdmin: z.boolean(),
  isDefaultAdmin: z.boolean(),
  externalId: z.string().nullable(),
  authPolicyId: z.string(),
  roleAttributes: stringList,
  tags: z.record(z.string(), z.unknown()),
  permissions: z
    .array(z.enum(IDENTITY_PERMISSIONS))
    .describe('what the identity may do besides what isAdmin grants; set by admins only'),
  disabled: z.boolean(),
  disabledUntil: instant.nullable(),
  isMfaEnabled: z.boolean(),
  passkeyCount: count.describe(
    'Passkeys (WebAuthn) the identity registered; an extension beyond the specification.',
  ),
  hasApiSession: z.boolean(),
  authenticators: identityAuthenticatorsSchema,
  enrollment: identityEnrollmentsSchema,
  ...timestamps,
});

export type IdentityDetail = z.infer<typeof identityDetailSchema>;
export type IdentityAuthenticators = z.infer<typeof identityAuthenticatorsSchema>;
export type IdentityEnrollments = z.infer<typeof identityEnrollmentsSchema>;
