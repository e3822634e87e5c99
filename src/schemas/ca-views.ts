import { z } from 'zod';
import { stringList, timestamps } from './view-fields.js';

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
