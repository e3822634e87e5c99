import { loginExtrasSchema, passwordLoginSchema } from '../schemas/authenticate-schemas.js';
import { caCreateSchema, caReplaceSchema, caUpdateSchema } from '../schemas/ca-schemas.js';
import {
  enrollCaSchema,
  enrollmentCreateSchema,
  enrollmentRefreshSchema,
  enrollOttSchema,
  enrollTokenSchema,
  enrollUpdbSchema,
} from '../schemas/enrollment-schemas.js';
import {
  identityCreateSchema,
  identityDisableSchema,
  identityPatchSchema,
  identityReplaceSchema,
} from '../schemas/identity-schemas.js';
import { mfaCodeSchema, optionalMfaCodeSchema } from '../schemas/mfa-schemas.js';
import { policyCreateSchema, policyPatchSchema } from '../schemas/policy-schemas.js';
import { signerCreateSchema, signerPatchSchema } from '../schemas/signer-schemas.js';
import { fromZod, type JsonSchema } from './json-schema.js';

/**
 * Request bodies, each derived from the zod schema its route parses (src/schemas). Descriptions
 * add only what a JSON Schema cannot say: rules checked in code after parsing.
 */

const identityType = 'User, Device, Service or Default, case-insensitive; default Default.';
const NAME_FORMAT =
  'Name of an identity made by auto CA enrollment; placeholders `[caName]`, `[caId]`, ' +
  '`[commonName]`, `[requestedName]`, `[identityId]`. Default `[caName]-[commonName]`.';

export const requestSchemas: Record<string, JsonSchema> = {
  // The route parses the credential (method=password only) and the extras separately.
  LoginBody: fromZod(passwordLoginSchema.partial().extend(loginExtrasSchema.shape), {
    username: 'Required for method=password.',
    password: 'Required for method=password.',
    configTypes: 'Configuration type ids for the session (`z_ct`).',
  }),
  MfaCode: fromZod(mfaCodeSchema, { code: 'A TOTP code or a recovery code.' }),
  OptionalMfaCode: fromZod(optionalMfaCodeSchema, {
    code: 'Required to remove a verified configuration (or the `mfa-validation-code` header).',
  }),
  EnrollUpdb: fromZod(enrollUpdbSchema, { token: 'Or the `token` query parameter.' }),
  EnrollOtt: fromZod(enrollOttSchema, { clientCsr: 'A PEM certificate signing request.' }),
  EnrollToken: fromZod(enrollTokenSchema, { token: 'Or the `token` query parameter.' }),
  EnrollCa: fromZod(enrollCaSchema, {
    name: "The value of `[requestedName]` in the CA's `identityNameFormat`; default the certificate CN.",
  }),
  IdentityCreate: fromZod(identityCreateSchema, {
    type: identityType,
    enrollment: 'At most one of `ott: true`, `ottca: "<ca id>"`, `updb: "<username>"`.',
    authPolicyId: 'Default `default`.',
  }),
  IdentityReplace: fromZod(identityReplaceSchema, { type: identityType }),
  IdentityPatch: fromZod(identityPatchSchema, { type: identityType }),
  IdentityDisable: fromZod(identityDisableSchema, { durationMinutes: '0 (the default): until enabled.' }),
  EnrollmentCreate: fromZod(enrollmentCreateSchema, {
    caId: 'Required for method ottca, refused otherwise.',
    username: 'Required for method updb, refused otherwise.',
  }),
  EnrollmentRefresh: fromZod(enrollmentRefreshSchema),
  AuthPolicyCreate: fromZod(policyCreateSchema, {
    secondary: '`requireExtJwtSigner` is an accepted alias of `requireExtJwt`.',
  }),
  AuthPolicyPatch: fromZod(policyPatchSchema),
  ExternalJwtSignerCreate: fromZod(signerCreateSchema, {
    certPem: 'Exactly one of certPem and jwksEndpoint.',
    jwksEndpoint: 'Exactly one of certPem and jwksEndpoint; https (http only on loopback).',
    claimsProperty: 'A claim name or a JSON pointer; default `sub`.',
    useExternalId: 'Default true: the claim is matched against the identity `externalId`.',
  }),
  ExternalJwtSignerPatch: fromZod(signerPatchSchema),
  CaCreate: fromZod(caCreateSchema, {
    certPem: 'One PEM CA certificate; fixed at creation.',
    identityNameFormat: NAME_FORMAT,
  }),
  CaReplace: fromZod(caReplaceSchema, {
    certPem: 'May repeat the stored certificate, never change it.',
    identityNameFormat: NAME_FORMAT,
  }),
  CaPatch: fromZod(caUpdateSchema, {
    certPem: 'May repeat the stored certificate, never change it.',
    identityNameFormat: NAME_FORMAT,
  }),
};
