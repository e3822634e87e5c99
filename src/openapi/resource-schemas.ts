import { IDENTITY_TYPES } from '../schemas/identity-schemas.js';
import { bool, dateTime, int, nullable, obj, ref, str, strList, type JsonSchema } from './json-schema.js';

/**
 * What the Edge APIs answer inside `data`, hand-written from the views the services build
 * (identity-view.ts, enrollment-service.ts, policyView, signerView, caView, key-service.ts …);
 * there is no zod schema on the way out.
 */

const timestamps = { createdAt: dateTime, updatedAt: dateTime };
const idName = obj({ id: str, name: str });
const enrollmentMethod: JsonSchema = { type: 'string', enum: ['ott', 'ottca', 'updb'] };

const identityEnrollment = obj(
  { id: str, token: str, jwt: str, expiresAt: dateTime, username: str, caId: str },
  ['username', 'caId'],
);

/** The identity detail, with its authenticators and open enrollments. */
const Identity = obj({
  id: str,
  name: str,
  type: { type: 'string', enum: [...IDENTITY_TYPES] },
  isAdmin: bool,
  isDefaultAdmin: bool,
  externalId: nullable(str),
  authPolicyId: str,
  roleAttributes: strList,
  tags: { type: 'object', additionalProperties: true },
  disabled: bool,
  disabledUntil: nullable(dateTime),
  isMfaEnabled: bool,
  hasApiSession: bool,
  authenticators: obj(
    {
      updb: obj({ id: str, username: str }),
      cert: obj({ id: str, fingerprint: { type: 'string', description: 'lowercase SHA-1 hex of the DER' } }),
    },
    ['updb', 'cert'],
  ),
  enrollment: obj({ ott: identityEnrollment, ottca: identityEnrollment, updb: identityEnrollment }, [
    'ott',
    'ottca',
    'updb',
  ]),
  ...timestamps,
});

const Enrollment = obj(
  {
    id: str,
    identityId: str,
    method: enrollmentMethod,
    token: str,
    jwt: { type: 'string', description: 'The enrollment JWT (claims iss, sub, jti, em, exp, iat).' },
    expiresAt: dateTime,
    username: str,
    caId: str,
    createdAt: dateTime,
  },
  ['username', 'caId'],
);

const Authenticator = obj(
  {
    id: str,
    identityId: str,
    method: { type: 'string', enum: ['updb', 'cert'] },
    username: str,
    fingerprint: str,
    certPem: str,
    caId: nullable(str),
    isExtendable: bool,
    ...timestamps,
  },
  ['username', 'fingerprint', 'certPem', 'caId', 'isExtendable'],
);

const AuthPolicy = obj({
  id: str,
  name: str,
  primary: obj({
    cert: obj({ allowed: bool, allowExpiredCerts: bool }),
    updb: obj({
      allowed: bool,
      minPasswordLength: int,
      requireSpecialChar: bool,
      requireNumberChar: bool,
      requireMixedCase: bool,
      maxAttempts: int,
      lockoutDurationMinutes: int,
    }),
    extJwt: obj({ allowed: bool, allowedSigners: strList }),
  }),
  secondary: obj({ requireTotp: bool, requireExtJwt: nullable(str) }),
  ...timestamps,
});

const ExternalJwtSigner = obj({
  id: str,
  name: str,
  enabled: bool,
  issuer: str,
  audience: nullable(str),
  certPem: nullable(str),
  jwksEndpoint: nullable(str),
  kid: nullable(str),
  claimsProperty: str,
  useExternalId: bool,
  externalAuthUrl: nullable(str),
  clientId: nullable(str),
  scopes: strList,
  ...timestamps,
});

/** The anonymous client view: what a client needs to start the IdP flow, no key material. */
const PublicExternalJwtSigner = obj({
  id: str,
  name: str,
  issuer: str,
  externalAuthUrl: nullable(str),
  clientId: nullable(str),
  scopes: strList,
});

const Ca = obj({
  id: str,
  name: str,
  certPem: str,
  fingerprint: str,
  isAuthEnabled: bool,
  isOttCaEnrollmentEnabled: bool,
  isAutoCaEnrollmentEnabled: bool,
  identityRoles: strList,
  identityNameFormat: str,
  isVerified: bool,
  verificationToken: str,
  ...timestamps,
});

const SigningKey = obj({
  kid: str,
  alg: str,
  state: { type: 'string', enum: ['published', 'signing', 'retiring'] },
  createdAt: dateTime,
  signsFrom: dateTime,
  retiredAt: nullable(dateTime),
});

/** One factor a login still owes, and where to submit it. */
const AuthQuery = obj(
  { typeId: str, format: str, httpMethod: str, httpUrl: str, minLength: int, maxLength: int, provider: str },
  [],
  { example: { typeId: 'MFA', format: 'numeric', httpMethod: 'POST', httpUrl: './authenticate/mfa' } },
);

const isMfaRequired = {
  type: 'boolean',
  description: 'The login owes a second factor: its policy requires one, or the identity has verified TOTP.',
};
const isMfaComplete = { type: 'boolean', description: 'A second factor has been verified for this session.' };

/** The answer of POST /authenticate: the legacy session and the factors it still owes. */
const ApiSession = obj({
  id: str,
  token: { type: 'string', description: 'Send it in the `svc-session` header.' },
  identityId: str,
  identity: idName,
  expiresAt: dateTime,
  expirationSeconds: int,
  isMfaRequired,
  isMfaComplete,
  authQueries: { type: 'array', items: ref('AuthQuery') },
});

const CurrentApiSession = obj({
  id: str,
  identityId: str,
  identity: idName,
  isAdmin: bool,
  authMethod: { type: 'string', description: '`oidc` for a bearer token, else the primary method.' },
  amr: strList,
  configTypes: strList,
  isCertExtendable: bool,
  isMfaRequired,
  isMfaComplete,
  expiresAt: dateTime,
  expirationSeconds: int,
});

/** A TOTP enrollment just started: the secret to show, unverified until a code is sent. */
const TotpEnrollment = obj({
  isVerified: { type: 'boolean', const: false },
  provisioningUrl: { type: 'string', description: 'otpauth://totp/<issuer>:<name>?issuer=…&secret=…' },
  recoveryCodes: strList,
});

const TotpDetail = obj(
  {
    isVerified: bool,
    provisioningUrl: { type: 'string', description: 'Only while unverified.' },
    createdAt: dateTime,
    verifiedAt: nullable(dateTime),
  },
  ['provisioningUrl'],
);

export const resourceSchemas: Record<string, JsonSchema> = {
  Identity,
  Enrollment,
  Authenticator,
  AuthPolicy,
  ExternalJwtSigner,
  PublicExternalJwtSigner,
  Ca,
  SigningKey,
  AuthQuery,
  ApiSession,
  CurrentApiSession,
  TotpEnrollment,
  TotpDetail,
  RecoveryCodesRemaining: obj({ remaining: int }),
  RecoveryCodes: obj({ recoveryCodes: strList }),
  EnrolledCertificate: obj({
    cert: { type: 'string', description: 'PEM chain: the new certificate, then the signing CA.' },
  }),
};
