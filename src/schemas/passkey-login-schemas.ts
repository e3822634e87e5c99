import { z } from 'zod';
import { loginExtrasSchema } from './authenticate-schemas.js';

/**
 * The WebAuthn response a login's passkey step carries in `passkey`: the browser's JSON (an
 * AuthenticationResponseJSON, or a RegistrationResponseJSON when a passkey is registered), or the
 * same JSON as text, as the login page's form field holds it. Its members are checked by the
 * passkey service; anything unusable there is a refused credential, not a validation error.
 */
const ceremonyResponse = z
  .unknown()
  .refine((v) => v !== undefined && v !== null, 'required')
  .transform((v) => {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v) as unknown;
    } catch {
      return v;
    }
  });

/** `POST /oidc/login/passkey` and `POST /authenticate/mfa` with a passkey. */
export const passkeyAssertionSchema = z.object({ passkey: ceremonyResponse });

/** `POST /oidc/login/passkey/register`: the new credential and, optionally, its name. */
export const passkeyLoginRegisterSchema = z.object({
  passkey: ceremonyResponse,
  name: z.string().trim().min(1).max(64).optional(),
});

/** A legacy passwordless ceremony's id, as `POST /authenticate/passkey/options` returned it. */
const ceremonyIdField = z.string().regex(/^[A-Za-z0-9_-]{16,64}$/, 'must be a ceremony id');

/** `POST /authenticate?method=passkey`. */
export const passkeyLoginSchema = loginExtrasSchema.extend({
  ceremonyId: ceremonyIdField,
  passkey: ceremonyResponse,
});
