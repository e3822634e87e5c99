import { clientApiSessionEndingRoutes } from './api-session-ending-paths.js';
import { passkeyRoutes } from './passkey-paths.js';
import { listEnvelope } from './components.js';
import { ref, type JsonSchema } from './json-schema.js';
import { buildDocument, type RouteDoc } from './operations.js';
import { dataResponse, emptyResponse, sessionRoutes } from './session-paths.js';

const MFA = '/current-identity/mfa';
const TOKEN_QUERY = {
  name: 'token',
  in: 'query',
  description: 'The enrollment token.',
  schema: { type: 'string' },
};

/** `/current-api-session` and self-service TOTP. */
const sessionAndMfa: RouteDoc[] = [
  {
    method: 'get',
    path: '/current-api-session',
    operationId: 'getCurrentApiSession',
    summary: "The caller's API session",
    tag: 'Current API session',
    access: 'authenticated',
    response: dataResponse('The session.', 'CurrentApiSession'),
  },
  {
    method: 'delete',
    path: '/current-api-session',
    operationId: 'deleteCurrentApiSession',
    summary: "End the caller's API session (with a bearer token: its `z_asid` session and grant)",
    tag: 'Current API session',
    access: 'authenticated',
    response: emptyResponse('The session has ended.'),
  },
  {
    method: 'get',
    path: '/current-identity/api-sessions',
    operationId: 'listOwnApiSessions',
    summary: "The caller's live API sessions",
    description:
      'Legacy (`svc-session`) and OIDC sessions of the calling identity, never a token; `isCurrent` marks the ' +
      'session of the credential the request was made with (a `svc-session`, or the `z_asid` of a bearer ' +
      'token). Filters and sorts as the management list `/api-sessions`.',
    tag: 'Current API session',
    access: 'authenticated',
    list: true,
    response: { status: 200, description: 'A page.', schema: listEnvelope(ref('OwnApiSession')) },
  },
  {
    method: 'post',
    path: MFA,
    operationId: 'startMfaEnrollment',
    summary: 'Start TOTP enrollment',
    description:
      'The calling API session (a `svc-session`, or the `z_asid` session of a bearer token) is recorded as ' +
      'the one that started it: until verified, only that session sees or verifies it. While any enrollment ' +
      'exists, a new start is 409 `MFA_EXISTS`.',
    tag: 'MFA',
    access: 'authenticated',
    response: dataResponse('Provisioning data and recovery codes, shown once.', 'TotpEnrollment', 201),
    errors: ['MFA_EXISTS'],
  },
  {
    method: 'get',
    path: MFA,
    operationId: 'getMfa',
    summary: "The caller's TOTP configuration",
    description:
      'A verified configuration is shown to every session of the identity. An unverified enrollment, with its ' +
      'provisioning URL, only to the API session that started it, whatever its MFA state: one started elsewhere ' +
      '(an OIDC login, another session or bearer token, or before the upgrade that recorded sessions) is 404.',
    tag: 'MFA',
    access: 'authenticated',
    response: dataResponse('The configuration.', 'TotpDetail'),
    errors: ['NOT_FOUND'],
  },
  {
    method: 'delete',
    path: MFA,
    operationId: 'deleteMfa',
    summary: 'Remove the TOTP configuration (a verified one needs a code)',
    description:
      'Any session of the identity may abandon an unverified enrollment, also one another session started: ' +
      "the starter's setup then fails visibly, and the enrollment can be started again.",
    tag: 'MFA',
    access: 'authenticated',
    parameters: [{ name: 'mfa-validation-code', in: 'header', schema: { type: 'string' } }],
    body: { schema: ref('OptionalMfaCode'), required: false },
    response: emptyResponse('Removed.'),
    errors: ['NOT_FOUND', 'MFA_INVALID_TOKEN', 'RATE_LIMITED'],
  },
  {
    method: 'post',
    path: `${MFA}/verify`,
    operationId: 'verifyMfa',
    summary: 'Verify the TOTP enrollment with a code from the app',
    description:
      'Only the API session that started the enrollment verifies it, whatever its MFA state; for any other ' +
      'the answer is 404, as when none is in progress.',
    tag: 'MFA',
    access: 'authenticated',
    body: { schema: ref('MfaCode') },
    response: emptyResponse('Verified; a session waiting for its TOTP step is complete.'),
    // The enrollment is verified, but the session still waits for its TOTP step.
    errors: ['NOT_FOUND', 'MFA_INVALID_TOKEN', 'RATE_LIMITED', 'SESSION_LIMIT_REACHED'],
  },
  {
    method: 'get',
    path: `${MFA}/qr-code`,
    operationId: 'getMfaQrCode',
    summary: 'The provisioning URL as a QR code, while unverified',
    description:
      'Only the API session that started the enrollment gets its QR code, whatever its MFA state; otherwise 404.',
    tag: 'MFA',
    access: 'authenticated',
    response: { status: 200, description: 'A PNG image.', media: 'image/png' },
    errors: ['NOT_FOUND'],
  },
  {
    method: 'get',
    path: `${MFA}/recovery-codes`,
    operationId: 'getMfaRecoveryCodes',
    summary: 'How many recovery codes remain (they are stored hashed)',
    description:
      'Of a verified configuration; of an unverified enrollment only for the API session that started it. ' +
      'Any other session gets 404, as when there is no configuration.',
    tag: 'MFA',
    access: 'authenticated',
    response: dataResponse('The count.', 'RecoveryCodesRemaining'),
    errors: ['NOT_FOUND'],
  },
  {
    method: 'post',
    path: `${MFA}/recovery-codes`,
    operationId: 'regenerateMfaRecoveryCodes',
    summary: 'Replace the recovery codes (a TOTP code proves the caller)',
    tag: 'MFA',
    access: 'authenticated',
    body: { schema: ref('MfaCode') },
    response: dataResponse('The new codes, shown once.', 'RecoveryCodes'),
    errors: ['NOT_FOUND', 'MFA_INVALID_TOKEN', 'RATE_LIMITED'],
  },
];

const ENROLL_ERRORS = ['INVALID_ENROLLMENT_TOKEN', 'ENROLLMENT_EXPIRED', 'INVALID_ENROLL_METHOD'] as const;

/** Completing an enrollment: the token is the credential. */
const enroll: RouteDoc[] = [
  {
    method: 'post',
    path: '/enroll/updb',
    operationId: 'enrollUpdb',
    summary: 'Set the password of a UPDB enrollment',
    description: "The username is the one fixed at creation; the policy's password rules apply.",
    tag: 'Enrollment',
    access: 'anonymous',
    rateLimited: true,
    parameters: [TOKEN_QUERY],
    body: { schema: ref('EnrollUpdb') },
    response: emptyResponse('Enrolled.'),
    errors: [...ENROLL_ERRORS],
  },
  {
    method: 'post',
    path: '/enroll/ott',
    operationId: 'enrollOtt',
    summary: 'Exchange a CSR for a client certificate of the service PKI',
    tag: 'Enrollment',
    access: 'anonymous',
    rateLimited: true,
    body: { schema: ref('EnrollOtt') },
    response: dataResponse('The certificate chain.', 'EnrolledCertificate'),
    errors: [...ENROLL_ERRORS],
  },
  {
    method: 'post',
    path: '/enroll/ottca',
    operationId: 'enrollOttca',
    summary: "Enroll the TLS client certificate issued by the enrollment's CA",
    tag: 'Enrollment',
    access: 'anonymous',
    rateLimited: true,
    parameters: [TOKEN_QUERY],
    body: { schema: ref('EnrollToken'), required: false },
    response: emptyResponse('Enrolled.'),
    errors: [...ENROLL_ERRORS, 'ENROLLMENT_CA_NOT_VALID', 'CERTIFICATE_FAILED_VALIDATION'],
  },
  ...(['/enroll/ca', '/enroll'] as const).map((path): RouteDoc => ({
    method: 'post',
    path,
    operationId: path === '/enroll' ? 'enroll' : 'enrollCa',
    summary:
      path === '/enroll'
        ? 'Auto CA enrollment (`method=ca`), the generic form of `/enroll/ca`'
        : 'Create an identity for the TLS client certificate of an auto-enrolling CA',
    description:
      'No token: the client certificate presented over mutual TLS is the credential. It must ' +
      'chain to a verified 3rd-party CA with `isAutoCaEnrollmentEnabled`. One transaction ' +
      "creates the identity (named by the CA's `identityNameFormat`, a six-digit counter " +
      "appended on a name collision; role attributes from the CA's `identityRoles`; auth " +
      'policy `default`) and the cert authenticator, so the certificate logs in at once with ' +
      '`POST /authenticate?method=cert`. A certificate that is missing, of an unknown, ' +
      'unverified or non-auto-enrolling CA, expired, under an expired intermediate or CA ' +
      'certificate, without `clientAuth` in its extendedKeyUsage, a CA certificate, or blocked ' +
      'because an admin deleted its identity: 401 `INVALID_AUTH`. A certificate already ' +
      'enrolled, also as a copy with a re-encoded signature: 409 `CONFLICT` naming ' +
      '`fingerprint`. As OpenZiti, the ' +
      'answer is an empty 200; the identity is the one the certificate then logs in as.',
    tag: 'Enrollment',
    access: 'anonymous',
    rateLimited: true,
    parameters:
      path === '/enroll'
        ? [{ name: 'method', in: 'query', required: true, schema: { type: 'string', enum: ['ca'] } }]
        : [],
    body: { schema: ref('EnrollCa'), required: false },
    response: emptyResponse('Enrolled: the identity and its cert authenticator exist.'),
    errors: ['INVALID_AUTH', 'CONFLICT'],
  })),
  {
    method: 'get',
    path: '/external-jwt-signers',
    operationId: 'listEnabledExternalJwtSigners',
    summary: 'Enabled external JWT signers, for starting the IdP flow',
    tag: 'External JWT signers',
    access: 'anonymous',
    list: true,
    response: {
      status: 200,
      description: 'A page of signers.',
      schema: listEnvelope(ref('PublicExternalJwtSigner')),
    },
  },
];

/** The OpenAPI document of `/edge/client/v1`. */
export function clientSpec(): JsonSchema {
  return buildDocument(
    {
      title: 'svc edge client API',
      description:
        'Sessions, self-service TOTP and enrollment for identities. Success: ' +
        '`{"data","meta"}`; errors: `{"error":{"code","message","cause?","requestId"},"meta":{"apiVersion"}}`.',
      basePath: '/edge/client/v1',
    },
    [
      ...sessionRoutes('client'),
      ...sessionAndMfa,
      ...passkeyRoutes(),
      ...clientApiSessionEndingRoutes(),
      ...enroll,
    ],
  );
}
