import { z } from 'zod';
import { count, idAndName, instant, stringList } from './view-fields.js';

/** One factor a legacy login still owes, and where to submit it. */
export const authQuerySchema = z
  .object({
    typeId: z.string(),
    format: z.string().optional(),
    httpMethod: z.string().optional(),
    httpUrl: z.string().optional(),
    minLength: count.optional(),
    maxLength: count.optional(),
    provider: z.string().optional(),
    passkey: z
      .object({
        httpMethod: z.string(),
        httpUrl: z.string(),
        optionsHttpMethod: z.string(),
        optionsHttpUrl: z.string(),
      })
      .optional()
      .describe(
        'Passkeys (an extension beyond the specification): the MFA step also takes `{"passkey": <assertion>}` ' +
          'at `httpUrl`, its options from `optionsHttpUrl`. Present when the identity has a passkey.',
      ),
    isPasskeyRegistered: z
      .boolean()
      .optional()
      .describe(
        "Present when the identity's policy requires a passkey (`secondary.requirePasskey`): only a passkey pays this step.",
      ),
  })
  .meta({
    examples: [{ typeId: 'MFA', format: 'numeric', httpMethod: 'POST', httpUrl: './authenticate/mfa' }],
  });

const isMfaRequired = z
  .boolean()
  .describe('The login owes a second factor: its policy requires one, or the identity has verified TOTP.');
const isMfaComplete = z.boolean().describe('A second factor has been verified for this session.');

/** The answer of POST /authenticate: the legacy session and the factors it still owes. */
export const apiSessionSchema = z.object({
  id: z.string(),
  token: z.string().describe('Send it in the `svc-session` header.'),
  identityId: z.string(),
  identity: idAndName,
  expiresAt: instant,
  expirationSeconds: z.number().int(),
  isMfaRequired,
  isMfaComplete,
  authQueries: z.array(authQuerySchema),
});

export const currentApiSessionSchema = z.object({
  id: z.string(),
  identityId: z.string(),
  identity: idAndName,
  isAdmin: z.boolean(),
  authMethod: z.string().describe('`oidc` for a bearer token, else the primary method.'),
  amr: stringList,
  configTypes: stringList,
  isCertExtendable: z.boolean(),
  isMfaRequired,
  isMfaComplete,
  expiresAt: instant,
  expirationSeconds: count,
});

/**
 * A live API session as admins and its identity see it: where it came from and how long it
 * lasts, never a token or its hash.
 */
export const apiSessionDetailSchema = z.object({
  id: z.string().describe('The API session id: the `z_asid` claim of the access tokens of an OIDC session.'),
  identity: idAndName,
  kind: z.enum(['legacy', 'oidc']).describe('`legacy`: a `svc-session` token; `oidc`: an OIDC grant.'),
  authMethod: z
    .string()
    .nullable()
    .describe(
      'The primary login method: `password`, `cert`, `ext-jwt`; null for sessions older than the field.',
    ),
  amr: stringList,
  ipAddress: z
    .string()
    .nullable()
    .describe(
      'The client address of the login, as the request log writes it; null for sessions older than the field.',
    ),
  createdAt: instant,
  lastActivityAt: instant.describe(
    'Legacy: the last use that slid its expiry (at most a minute apart). OIDC: the last code exchange or refresh.',
  ),
  expiresAt: instant,
  isMfaRequired,
  isMfaComplete,
});

/** One of the caller's own sessions: the same, and whether it is the one making the call. */
export const ownApiSessionSchema = apiSessionDetailSchema.extend({
  isCurrent: z.boolean().describe('The session of the credential this request was made with.'),
});

export type AuthQueryView = z.infer<typeof authQuerySchema>;
export type ApiSessionView = z.infer<typeof apiSessionSchema>;
export type CurrentApiSessionView = z.infer<typeof currentApiSessionSchema>;
export type ApiSessionDetailView = z.infer<typeof apiSessionDetailSchema>;
export type OwnApiSessionView = z.infer<typeof ownApiSessionSchema>;
