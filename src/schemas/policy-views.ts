import { z } from 'zod';
import { SESSION_LIMIT_ACTIONS } from './policy-schemas.js';
import { count, stringList, timestamps } from './view-fields.js';

/** An auth policy as the API shows it (the secondary JWT signer as `requireExtJwt`). */
export const authPolicyViewSchema = z.object({
  id: z.string(),
  name: z.string(),
  primary: z.object({
    cert: z.object({
      allowed: z.boolean(),
      allowExpiredCerts: z.boolean(),
      bindTokens: z
        .boolean()
        .describe(
          'An OIDC certificate login yields tokens bound to the certificate (RFC 8705): usable only over a connection presenting it.',
        ),
    }),
    updb: z.object({
      allowed: z.boolean(),
      minPasswordLength: count,
      requireSpecialChar: z.boolean(),
      requireNumberChar: z.boolean(),
      requireMixedCase: z.boolean(),
      maxAttempts: count,
      lockoutDurationMinutes: count,
    }),
    extJwt: z.object({ allowed: z.boolean(), allowedSigners: stringList }),
    passkey: z.object({
      allowed: z
        .boolean()
        .describe(
          'A passkey with user verification signs in alone, without a password (passkeys are an extension beyond the specification).',
        ),
    }),
  }),
  secondary: z.object({
    requireTotp: z.boolean(),
    requireExtJwt: z.string().nullable(),
    requirePasskey: z.boolean().describe('A passkey is owed as a second factor at every login.'),
  }),
  sessions: z.object({
    max: count.describe('The most fully authenticated API sessions an identity holds at once; 0: no limit.'),
    onLimit: z
      .enum(SESSION_LIMIT_ACTIONS)
      .describe(
        'A login over the limit ends the oldest session (evictOldest) or is refused with 403 (refuse).',
      ),
  }),
  ...timestamps,
});

export type AuthPolicyView = z.infer<typeof authPolicyViewSchema>;
