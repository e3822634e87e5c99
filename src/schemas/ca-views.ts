import { z } from 'zod';
import { instant, stringList, timestamps } from './view-fields.js';

/** A 3rd-party CA as the management API shows it. */
export const caViewSchema = z.object({
  id: z.string(),
  name: z.string(),
  certPem: z.string(),
  fingerprint: z.string(),
  isAuthEnabled: z.boolean(),
  isOttCaEnrollmentEnabled: z.boolean(),
  isAutoCaEnrollmentEnabled: z.boolean(),
  identityRoles: stringList,
  identityNameFormat: z.string(),
  isVerified: z.boolean(),
  verificationToken: z.string(),
  ...timestamps,
});

export type CaView = z.infer<typeof caViewSchema>;

/** A certificate of a CA that auto CA enrollment refuses since its identity was deleted. */
export const blockedCertificateViewSchema = z.object({
  id: z.string(),
  caId: z.string(),
  /** SHA-256 of the tbsCertificate, hex: the certificate whatever encoding its signature has. */
  tbsSha256: z.string(),
  /** SHA-1 of the DER as enrolled, hex (the `fingerprint` the authenticator showed). */
  fingerprint: z.string(),
  subject: z.string(),
  commonName: z.string().nullable(),
  identityId: z.string(),
  identityName: z.string(),
  createdAt: instant,
});

export type BlockedCertificateView = z.infer<typeof blockedCertificateViewSchema>;
