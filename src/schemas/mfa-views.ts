import { z } from 'zod';
import { count, instant, stringList } from './view-fields.js';

/** A TOTP enrollment just started: the secret to show, unverified until a code is sent. */
export const totpEnrollmentSchema = z.object({
  isVerified: z.literal(false),
  provisioningUrl: z.string().describe('otpauth://totp/<issuer>:<name>?issuer=…&secret=…'),
  recoveryCodes: stringList,
});

export const totpDetailSchema = z.object({
  isVerified: z.boolean(),
  provisioningUrl: z.string().optional().describe('Only while unverified.'),
  createdAt: instant,
  verifiedAt: instant.nullable(),
});

export const recoveryCodesRemainingSchema = z.object({ remaining: count });

export const recoveryCodesSchema = z.object({ recoveryCodes: stringList });

export type TotpEnrollmentView = z.infer<typeof totpEnrollmentSchema>;
export type TotpDetailView = z.infer<typeof totpDetailSchema>;
export type RecoveryCodesRemainingView = z.infer<typeof recoveryCodesRemainingSchema>;
export type RecoveryCodesView = z.infer<typeof recoveryCodesSchema>;
