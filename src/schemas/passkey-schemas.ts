import { z } from 'zod';
import { nonEmpty } from './schema-fields.js';

/**
 * Request bodies of the passkey endpoints, and the WebAuthn responses inside them. The responses
 * are what `navigator.credentials` returns, encoded by the browser's `toJSON()` (or
 * @simplewebauthn/browser): base64url strings, bounded so that a hostile one is refused here
 * (clientDataJSON is about 200 bytes, an attestation "none" object a few hundred).
 */

const base64url = (max: number) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .regex(/^[A-Za-z0-9_-]+={0,2}$/, 'must be base64url');

/** A credential id: at most 1023 bytes (WebAuthn Level 3, §5.1), so 1364 base64url characters. */
const credentialId = base64url(1364);
const clientDataJSON = base64url(4096);

/** What the browser adds beside the fields we read (`clientExtensionResults` and others) is kept. */
const extensionResults = z.record(z.string(), z.unknown()).default({});

export const registrationResponseSchema = z.looseObject({
  id: credentialId,
  rawId: credentialId,
  type: z.literal('public-key'),
  response: z.looseObject({
    clientDataJSON,
    attestationObject: base64url(65_536),
    transports: z.array(z.string().max(32)).max(16).optional(),
  }),
  authenticatorAttachment: z.string().max(32).optional(),
  clientExtensionResults: extensionResults,
});

export const authenticationResponseSchema = z.looseObject({
  id: credentialId,
  rawId: credentialId,
  type: z.literal('public-key'),
  response: z.looseObject({
    clientDataJSON,
    authenticatorData: base64url(8192),
    signature: base64url(2048),
    userHandle: base64url(128).optional(),
  }),
  authenticatorAttachment: z.string().max(32).optional(),
  clientExtensionResults: extensionResults,
});

/** The name a person gives a passkey ("laptop", "phone"): one line. */
export const passkeyName = nonEmpty(64);

/**
 * Re-authentication sent with a request that changes the caller's passkeys when its sign-in is
 * not recent: the password, or a TOTP code (or recovery code).
 */
const reauthentication = {
  password: z.string().max(1024).optional(),
  code: z.string().max(1024).optional(),
};

export const passkeyOptionsSchema = z.strictObject({ ...reauthentication });

export const passkeyRegisterSchema = z.strictObject({
  name: passkeyName,
  response: z.unknown(),
  ...reauthentication,
});

export const passkeyRenameSchema = z.strictObject({ name: passkeyName, ...reauthentication });

/** A removal's body is optional: only the re-authentication of an old sign-in. */
export const passkeyRemoveSchema = z.strictObject({ ...reauthentication });

export type RegistrationResponseInput = z.output<typeof registrationResponseSchema>;
export type AuthenticationResponseInput = z.output<typeof authenticationResponseSchema>;
