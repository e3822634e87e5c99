import { z } from 'zod';

/**
 * A TOTP or recovery code. Any string up to 1 KiB passes here: a wrong shape is a wrong code
 * (400 MFA_INVALID_TOKEN, counted by the failure limit), not a validation error.
 */
export const mfaCodeSchema = z.object({ code: z.string().max(1024) });

/** DELETE /current-identity/mfa: the code may come in the body or in `mfa-validation-code`. */
export const optionalMfaCodeSchema = z.object({ code: z.string().max(1024).optional() });
