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

export type AuthQueryView = z.infer<typeof authQuerySchema>;
export type ApiSessionView = z.infer<typeof apiSessionSchema>;
export type CurrentApiSessionView = z.infer<typeof currentApiSessionSchema>;
