import { loginExtrasSchema, passwordLoginSchema } from '../schemas/authenticate-schemas.js';
import {
  CA_IGNORED_MEMBERS,
  caCreateSchema,
  caReplaceSchema,
  caUpdateSchema,
} from '../schemas/ca-schemas.js';
import {
  enrollCaSchema,
  enrollmentCreateSchema,
  enrollmentRefreshSchema,
  enrollOttSchema,
  enrollTokenSchema,
  enrollUpdbSchema,
} from '../schemas/enrollment-schemas.js';
import {
  IDENTITY_IGNORED_MEMBERS,
  identityCreateSchema,
  identityDisableSchema,
  identityPatchSchema,
  identityReplaceSchema,
} from '../schemas/identity-schemas.js';
import { mfaCodeSchema, optionalMfaCodeSchema } from '../schemas/mfa-schemas.js';
import { passkeyAssertionSchema, passkeyLoginSchema } from '../schemas/passkey-login-schemas.js';
import {
  passkeyOptionsSchema,
  passkeyRegisterSchema,
  passkeyRemoveSchema,
  passkeyRenameSchema,
} from '../schemas/passkey-schemas.js';
import { POLICY_IGNORED_MEMBERS, policyCreateSchema, policyPatchSchema } from '../schemas/policy-schemas.js';
import { SIGNER_IGNORED_MEMBERS, signerCreateSchema, signerPatchSchema } from '../schemas/signer-schemas.js';
import { webhookCreateSchema, webhookPatchSchema } from '../schemas/webhook-schemas.js';
import { fromZod, type JsonSchema } from './json-schema.js';

/**
 * Request bodies, each derived from the zod schema its route parses (src/schemas). Descriptions
 * add only what a JSON Schema cannot say: rules checked in code after parsing.
 */

const identityType = 'User, Device, Service or Default, case-insensitive; default Default.';
const NAME_FORMAT =
  'Name of an identity made by auto CA enrollment; placeholders `[caName]`, `[caId]`, ' +
  '`[commonName]`, `[requestedName]`, `[identityId]`. Default `[caName]-[commonName]`.';

/** A management body: strict, naming the OpenZiti members it accepts and ignores. */
function strictDoc(schema: JsonSchema, ignored: readonly string[]): JsonSchema {
  const list = ignored.map((m) => `\`${m}\``).join(', ');
  return {
    ...schema,
    description:
      'Any other member is refused: 400 COULD_NOT_VALIDATE naming it. ' +
      `Accepted for OpenZiti clients and ignored: ${list}.`,
  };
}

const NAME =
  'PRECIS FreeformClass (RFC 8264 §4.3) in NFC: no invisible characters; no space other than ' +
  'single U+0020 spaces, no U+2800, no combining mark without a letter to sit on. A PUT or ' +
  'PATCH that repeats the stored name unchanged is not checked again.';
const USERNAME =
  'PRECIS IdentifierClass (RFC 8264 §4.2) in NFC; case-sensitive; Latin not mixed with ' +
  'Cyrillic or Greek; no combining mark without a letter to sit on.';

const WEBHOOK_URL =
  'An absolute https URL without user name or password; unless `webhooks.allowPrivateTargets`, not a ' +
  'private, loopback, link-local or other internal address.';
const WEBHOOK_EVENTS =
  'Event names (`identity.created`), prefixes ending in `.*` (`identity.*`), or `*` for every event; ' +
  'lowercase dotted words; 1 to 50, duplicates dropped.';

/** A body of our own resources (no OpenZiti counterpart): strict, nothing ignored. */
const closedDoc = (schema: JsonSchema): JsonSchema => ({
  ...schema,
  description: 'Any other member is refused: 400 COULD_NOT_VALIDATE naming it.',
});

export const requestSchemas: Record<string, JsonSchema> = {
  // The route parses the credential (method=password only) and the extras separately.
  LoginBody: fromZod(
    passwordLoginSchema
      .partial()
      .extend(loginExtrasSchema.shape)
      .extend(passkeyLoginSchema.pick({ ceremonyId: true, passkey: true }).partial().shape),
    {
      username: 'Required for method=password.',
      password: 'Required for method=password.',
      configTypes: 'Configuration type ids for the session (`z_ct`).',
      ceremonyId:
        'Required for method=passkey (an extension beyond the specification): as `POST /authenticate/passkey/options` returned it.',
      passkey:
        'Required for method=passkey: the AuthenticationResponseJSON of `navigator.credentials.get` with those options.',
    },
  ),
  MfaCode: fromZod(mfaCodeSchema, { code: 'A TOTP code or a recovery code.' }),
  MfaStep: fromZod(mfaCodeSchema.partial().extend(passkeyAssertionSchema.partial().shape), {
    code: 'A TOTP code or a recovery code.',
    passkey:
      'Instead of `code` (an extension beyond the specification): the AuthenticationResponseJSON of one of ' +
      "the identity's passkeys, with the options of `POST /authenticate/mfa/passkey/options`. Required, " +
      "and `code` refused, when the identity's policy requires a passkey.",
  }),
  OptionalMfaCode: fromZod(optionalMfaCodeSchema, {
    code: 'Required to remove a verified configuration (or the `mfa-validation-code` header).',
  }),
  PasskeyOptionsBody: fromZod(passkeyOptionsSchema, {
    password: 'The password, when the sign-in is older than 5 minutes.',
    code: 'Or a TOTP or recovery code, when the sign-in is older than 5 minutes.',
  }),
  PasskeyRegister: fromZod(passkeyRegisterSchema, {
    name: 'What the person calls the passkey (one line, up to 64 characters).',
    response: 'The RegistrationResponseJSON of navigator.credentials.create (PublicKeyCredential.toJSON()).',
    password: 'The password, when the sign-in is older than 5 minutes.',
    code: 'Or a TOTP or recovery code, when the sign-in is older than 5 minutes.',
  }),
  PasskeyRename: fromZod(passkeyRenameSchema, {
    name: 'The new name.',
    password: 'The password, when the sign-in is older than 5 minutes.',
    code: 'Or a TOTP or recovery code, when the sign-in is older than 5 minutes.',
  }),
  PasskeyRemoveBody: fromZod(passkeyRemoveSchema, {
    password: 'The password, when the sign-in is older than 5 minutes.',
    code: 'Or a TOTP or recovery code, when the sign-in is older than 5 minutes.',
  }),
  EnrollUpdb: fromZod(enrollUpdbSchema, { token: 'Or the `token` query parameter.' }),
  EnrollOtt: fromZod(enrollOttSchema, { clientCsr: 'A PEM certificate signing request.' }),
  EnrollToken: fromZod(enrollTokenSchema, { token: 'Or the `token` query parameter.' }),
  EnrollCa: fromZod(enrollCaSchema, {
    name: "The value of `[requestedName]` in the CA's `identityNameFormat`; default the certificate CN.",
  }),
  IdentityCreate: strictDoc(
    fromZod(identityCreateSchema, {
      name: NAME,
      type: identityType,
      enrollment:
        'At most one of `ott: true`, `ottca: "<ca id>"`, `updb: "<username>"`; ' +
        `the username: ${USERNAME}`,
      authPolicyId: 'Default `default`.',
    }),
    IDENTITY_IGNORED_MEMBERS,
  ),
  IdentityReplace: strictDoc(
    fromZod(identityReplaceSchema, { name: NAME, type: identityType }),
    IDENTITY_IGNORED_MEMBERS,
  ),
  IdentityPatch: strictDoc(
    fromZod(identityPatchSchema, { name: NAME, type: identityType }),
    IDENTITY_IGNORED_MEMBERS,
  ),
  IdentityDisable: fromZod(identityDisableSchema, { durationMinutes: '0 (the default): until enabled.' }),
  EnrollmentCreate: fromZod(enrollmentCreateSchema, {
    caId: 'Required for method ottca, refused otherwise.',
    username: `Required for method updb, refused otherwise. ${USERNAME}`,
  }),
  EnrollmentRefresh: fromZod(enrollmentRefreshSchema),
  AuthPolicyCreate: strictDoc(
    fromZod(policyCreateSchema, {
      name: NAME,
      secondary: '`requireExtJwtSigner` is an accepted alias of `requireExtJwt`.',
    }),
    POLICY_IGNORED_MEMBERS,
  ),
  AuthPolicyPatch: strictDoc(fromZod(policyPatchSchema, { name: NAME }), POLICY_IGNORED_MEMBERS),
  ExternalJwtSignerCreate: strictDoc(
    fromZod(signerCreateSchema, {
      name: NAME,
      certPem: 'Exactly one of certPem and jwksEndpoint.',
      jwksEndpoint: 'Exactly one of certPem and jwksEndpoint; https (http only on loopback).',
      claimsProperty: 'A claim name or a JSON pointer; default `sub`.',
      useExternalId: 'Default true: the claim is matched against the identity `externalId`.',
    }),
    SIGNER_IGNORED_MEMBERS,
  ),
  ExternalJwtSignerPatch: strictDoc(fromZod(signerPatchSchema, { name: NAME }), SIGNER_IGNORED_MEMBERS),
  CaCreate: strictDoc(
    fromZod(caCreateSchema, {
      name: NAME,
      certPem: 'One PEM CA certificate; fixed at creation.',
      identityNameFormat: NAME_FORMAT,
    }),
    CA_IGNORED_MEMBERS,
  ),
  CaReplace: strictDoc(
    fromZod(caReplaceSchema, {
      name: NAME,
      certPem: 'May repeat the stored certificate, never change it.',
      identityNameFormat: NAME_FORMAT,
    }),
    CA_IGNORED_MEMBERS,
  ),
  CaPatch: strictDoc(
    fromZod(caUpdateSchema, {
      name: NAME,
      certPem: 'May repeat the stored certificate, never change it.',
      identityNameFormat: NAME_FORMAT,
    }),
    CA_IGNORED_MEMBERS,
  ),
  WebhookCreate: closedDoc(
    fromZod(webhookCreateSchema, {
      name: NAME,
      url: WEBHOOK_URL,
      events: WEBHOOK_EVENTS,
      enabled: 'Default true.',
    }),
  ),
  WebhookPatch: closedDoc(
    fromZod(webhookPatchSchema, {
      name: NAME,
      url: WEBHOOK_URL,
      events: WEBHOOK_EVENTS,
      enabled:
        'true on a disabled webhook clears `disabledReason` and `failingSince`; its pending deliveries ' +
        'younger than 24 hours are due at once, older ones fail ("expired while the webhook was disabled").',
    }),
  ),
};
