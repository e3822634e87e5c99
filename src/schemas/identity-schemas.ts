import { z } from 'zod';
import type { ListFields } from './list-filter.js';
import { listQueryParser } from './list-query.js';
import { trimSpaces, usernameProblem } from './name-rules.js';
import { LINE_REASON, isForbiddenInLine, line } from './safe-text.js';
import { strictBody } from './strict-body.js';

/**
 * Request bodies of the identity endpoints. Bodies may be JSON or form-encoded,
 * so booleans and integers also come as the strings a form carries.
 */

const formBoolean = (v: unknown) => (v === 'true' ? true : v === 'false' ? false : v);
export const booleanField = z.preprocess(formBoolean, z.boolean());

export const IDENTITY_TYPES = ['User', 'Device', 'Service', 'Default'] as const;
export type IdentityTypeName = (typeof IDENTITY_TYPES)[number];

/** Case-insensitive on input, returned in the canonical spelling. */
const identityType = z.string().transform((value, ctx): IdentityTypeName => {
  const match = IDENTITY_TYPES.find((t) => t.toLowerCase() === value.toLowerCase());
  if (match) return match;
  ctx.addIssue({ code: 'custom', message: `must be one of ${IDENTITY_TYPES.join(', ')}` });
  return z.NEVER;
});

/** Checked against PRECIS FreeformClass by the service, which knows the stored name (name-rules.ts). */
const name = line(255)
  .transform(trimSpaces)
  .refine((s) => s.length > 0, 'must not be empty');

/** Blank means none, as in OpenZiti, whose clients send blanks. */
const externalId = line(255)
  .nullable()
  .transform((s) => (s === null || s.trim() === '' ? null : s));

const roleAttributes = z
  .array(line(255).min(1))
  .max(256)
  .nullable()
  .transform((list) => [...new Set(list ?? [])]);

/**
 * What an identity may be allowed besides what isAdmin grants: `token-introspection` lets a resource
 * server ask `/oidc/token/introspection` about tokens. Only the management API (admins) sets them.
 */
export const IDENTITY_PERMISSIONS = ['token-introspection'] as const;
export type IdentityPermission = (typeof IDENTITY_PERMISSIONS)[number];

const permissions = z
  .array(z.enum(IDENTITY_PERMISSIONS))
  .max(16)
  .describe(
    'what the identity may do besides what isAdmin grants: token-introspection lets it ask ' +
      '/oidc/token/introspection about tokens',
  )
  .nullable()
  .transform((list) => [...new Set(list ?? [])].sort());

/** Any JSON object; jsonb refuses \u0000, so it is refused here with a field error instead. */
const tags = z
  .record(z.string(), z.unknown())
  .nullable()
  .transform((t) => t ?? {})
  .refine((t) => !JSON.stringify(t).includes('\\u0000'), 'must not contain NUL characters')
  .refine((t) => Object.keys(t).every((key) => !isForbiddenInLine(key)), `keys ${LINE_REASON}`);

/** New usernames only (a login takes any stored one): PRECIS IdentifierClass (name-rules.ts). */
export const username = line(255)
  .min(1, 'must not be empty')
  .superRefine((s, ctx) => {
    const problem = usernameProblem(s);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
const id = line(255).min(1, 'must not be empty');

/** `enrollment`: at most one of ott / ottca / updb; two members or `ott: false` alone are refused. */
const enrollment = z
  .object({ ott: booleanField.optional(), ottca: id.optional(), updb: username.optional() })
  .strict()
  .nullable()
  .optional()
  .transform((e, ctx) => {
    if (!e) return undefined;
    const members = (['ott', 'ottca', 'updb'] as const).filter((m) => e[m] !== undefined);
    if (members.length > 1 || e.ott === false) {
      ctx.addIssue({ code: 'custom', message: 'must request at most one of ott: true, ottca or updb' });
      return z.NEVER;
    }
    if (e.ottca !== undefined) return { method: 'ottca' as const, caId: e.ottca };
    if (e.updb !== undefined) return { method: 'updb' as const, username: e.updb };
    if (e.ott === true) return { method: 'ott' as const };
    return undefined;
  });

const mutableFields = {
  name,
  type: identityType.default('Default'),
  isAdmin: booleanField,
  externalId: externalId.optional().transform((v) => v ?? null),
  authPolicyId: id.optional().transform((v) => v ?? 'default'),
  roleAttributes: roleAttributes.optional().transform((v) => v ?? []),
  tags: tags.optional().transform((v) => v ?? {}),
  permissions: permissions.optional().transform((v) => v ?? []),
};

/** OpenZiti's hosting and app data members: this service has no routers or services to use them. */
export const IDENTITY_IGNORED_MEMBERS = [
  'defaultHostingPrecedence',
  'defaultHostingCost',
  'serviceHostingPrecedences',
  'serviceHostingCosts',
  'appData',
] as const;

export const identityCreateSchema = strictBody({ ...mutableFields, enrollment }, IDENTITY_IGNORED_MEMBERS);

/** PUT replaces every mutable field; enrollment, authenticators and isDefaultAdmin are untouched. */
export const identityReplaceSchema = strictBody(mutableFields, IDENTITY_IGNORED_MEMBERS);

export const identityPatchSchema = strictBody(
  {
    name: name.optional(),
    type: identityType.optional(),
    isAdmin: booleanField.optional(),
    externalId: externalId.optional(),
    authPolicyId: id.optional(),
    roleAttributes: roleAttributes.optional(),
    tags: tags.optional(),
    permissions: permissions.optional(),
  },
  IDENTITY_IGNORED_MEMBERS,
);

// Ten years: long enough for any real suspension, short enough to stay a valid timestamp.
const MAX_DISABLE_MINUTES = 10 * 366 * 24 * 60;

export const identityDisableSchema = z.strictObject({
  durationMinutes: z
    .preprocess(
      (v) => (typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : v),
      z.number().int().min(0).max(MAX_DISABLE_MINUTES),
    )
    .optional()
    .transform((v) => v ?? 0),
});

export type IdentityCreateInput = z.output<typeof identityCreateSchema>;
export type IdentityReplaceInput = z.output<typeof identityReplaceSchema>;
export type IdentityPatchInput = z.output<typeof identityPatchSchema>;
export type EnrollmentRequest = NonNullable<IdentityCreateInput['enrollment']>;

/** API field → column, for list filters and sorting. */
export const identityListFields = {
  id: { column: 'id', type: 'string' },
  name: { column: 'name', type: 'string' },
  type: { column: 'type', type: 'string' },
  isAdmin: { column: 'is_admin', type: 'boolean' },
  isDefaultAdmin: { column: 'is_default_admin', type: 'boolean' },
  externalId: { column: 'external_id', type: 'string' },
  authPolicyId: { column: 'auth_policy_id', type: 'string' },
  disabled: { column: 'disabled', type: 'boolean' },
  createdAt: { column: 'created_at', type: 'datetime' },
  updatedAt: { column: 'updated_at', type: 'datetime' },
} satisfies ListFields;

export const parseIdentityList = listQueryParser(identityListFields, 'name asc');
