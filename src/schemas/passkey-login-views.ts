import { z } from 'zod';
import { stringList } from './view-fields.js';

/**
 * `PublicKeyCredentialRequestOptionsJSON` (WebAuthn Level 3, §5.5), to pass to
 * `PublicKeyCredential.parseRequestOptionsFromJSON` and `navigator.credentials.get`. Empty
 * `allowCredentials` (a passwordless sign-in): the authenticator offers its discoverable passkeys.
 */
export const passkeyRequestOptionsSchema = z.object({
  challenge: z.string(),
  rpId: z.string().optional(),
  timeout: z.number().optional(),
  allowCredentials: z
    .array(z.object({ id: z.string(), type: z.string(), transports: stringList.optional() }))
    .optional(),
  userVerification: z.string().optional(),
  hints: stringList.optional(),
});

/** `POST /authenticate/passkey/options`: the options, and the ceremony id to send back with the assertion. */
export const passkeyCeremonySchema = z.object({
  ceremonyId: z
    .string()
    .describe('Send it back as `ceremonyId` with `POST /authenticate?method=passkey`; valid for 5 minutes.'),
  options: passkeyRequestOptionsSchema,
});

/** `POST /authenticate/mfa/passkey/options`: options for an assertion of one of the caller's passkeys. */
export const passkeyAssertionOptionsSchema = z.object({ options: passkeyRequestOptionsSchema });

export type PasskeyCeremonyView = z.infer<typeof passkeyCeremonySchema>;
export type PasskeyAssertionOptionsView = z.infer<typeof passkeyAssertionOptionsSchema>;
