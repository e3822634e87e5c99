import { z } from 'zod';
import { instant, stringList } from './view-fields.js';

/** A passkey as its owner and admins see it: never the key or the credential id. */
export const passkeySchema = z.object({
  id: z.string(),
  name: z.string(),
  createdAt: instant,
  lastUsedAt: instant.nullable(),
  backedUp: z.boolean().describe('The authenticator reported the credential as synced (backed up).'),
});

export const passkeyCreatedSchema = z.object({ id: z.string(), name: z.string(), createdAt: instant });

const credentialDescriptor = z.object({
  id: z.string(),
  type: z.literal('public-key'),
  transports: stringList.optional(),
});

/**
 * `PublicKeyCredentialCreationOptionsJSON` (WebAuthn Level 3, §5.4), to pass to
 * `PublicKeyCredential.parseCreationOptionsFromJSON` and `navigator.credentials.create`.
 */
export const passkeyCreationOptionsSchema = z.object({
  rp: z.object({ id: z.string().optional(), name: z.string() }),
  user: z.object({
    id: z.string().describe('A random handle (base64url), never the identity id or name.'),
    name: z.string(),
    displayName: z.string(),
  }),
  challenge: z.string(),
  pubKeyCredParams: z.array(z.object({ alg: z.number(), type: z.literal('public-key') })),
  timeout: z.number().optional(),
  excludeCredentials: z.array(credentialDescriptor).optional(),
  authenticatorSelection: z
    .object({
      authenticatorAttachment: z.string().optional(),
      requireResidentKey: z.boolean().optional(),
      residentKey: z.string().optional(),
      userVerification: z.string().optional(),
    })
    .optional(),
  hints: stringList.optional(),
  attestation: z.string().optional(),
  attestationFormats: stringList.optional(),
  extensions: z.object({ credProps: z.boolean().optional() }).optional(),
});

/** The creation options, and warnings for the person (passkeys of another rpId). */
export const passkeyRegistrationOptionsSchema = z.object({
  options: passkeyCreationOptionsSchema,
  warnings: stringList,
});

export type PasskeyView = z.infer<typeof passkeySchema>;
export type PasskeyCreatedView = z.infer<typeof passkeyCreatedSchema>;
export type PasskeyOptionsView = z.infer<typeof passkeyRegistrationOptionsSchema>;
export type PasskeyCreationOptionsView = z.infer<typeof passkeyCreationOptionsSchema>;
