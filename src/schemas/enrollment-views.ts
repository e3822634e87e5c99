import { z } from 'zod';
import { instant, timestamps } from './view-fields.js';

/** An enrollment of the management API, its token and JWT included. */
export const enrollmentViewSchema = z.object({
  id: z.string(),
  identityId: z.string(),
  method: z.enum(['ott', 'ottca', 'updb']),
  token: z.string(),
  jwt: z.string().describe('The enrollment JWT (claims iss, sub, jti, em, exp, iat).'),
  expiresAt: instant,
  username: z.string().optional(),
  caId: z.string().optional(),
  createdAt: instant,
});

/** An authenticator: never the password hash. */
export const authenticatorViewSchema = z.object({
  id: z.string(),
  identityId: z.string(),
  method: z.enum(['updb', 'cert', 'passkey']),
  name: z
    .string()
    .optional()
    .describe("A passkey's name (passkeys are an extension beyond the specification)."),
  lastUsedAt: instant.nullable().optional().describe("A passkey's last use at a login."),
  username: z.string().nullable().optional(),
  fingerprint: z.string().nullable().optional(),
  certPem: z.string().nullable().optional(),
  caId: z.string().nullable().optional(),
  isExtendable: z.boolean().optional(),
  ...timestamps,
});

/** The answer of `enroll/ott`. */
export const enrolledCertificateSchema = z.object({
  cert: z.string().describe('PEM chain: the new certificate, then the signing CA.'),
});

export type EnrollmentView = z.infer<typeof enrollmentViewSchema>;
export type AuthenticatorView = z.infer<typeof authenticatorViewSchema>;
export type EnrolledCertificate = z.infer<typeof enrolledCertificateSchema>;
