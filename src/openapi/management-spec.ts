import { managementApiSessionEndingRoutes } from './api-session-ending-paths.js';
import { auditEventRoutes } from './audit-event-paths.js';
import { listEnvelope } from './components.js';
import { admin, crud, type Extra } from './crud-routes.js';
import { ref, type JsonSchema } from './json-schema.js';
import { buildDocument, type RouteDoc } from './operations.js';
import { dataResponse, emptyResponse, sessionRoutes } from './session-paths.js';
import { webhookRoutes } from './webhook-paths.js';
import { versionRoutes } from './version-paths.js';

const conflict = { errors: ['CONFLICT'] } satisfies Extra;
const unknownRefOrConflict = { errors: ['NOT_FOUND', 'CONFLICT'] } satisfies Extra;

function identityRoutes(): RouteDoc[] {
  const c = crud(
    {
      path: '/identities',
      tag: 'Identities',
      singular: 'Identity',
      plural: 'Identities',
      noun: 'identity',
      nouns: 'identities',
      view: 'Identity',
      create: 'IdentityCreate',
      replace: 'IdentityReplace',
      patch: 'IdentityPatch',
    },
    {
      create: {
        ...unknownRefOrConflict,
        description: 'The identity and its enrollment are written in one transaction.',
      },
      replace: conflict,
      patch: conflict,
      delete: {
        description:
          'Removes its sessions, authenticators, enrollments, TOTP and passkeys; its tokens stop working.',
        errors: ['CANNOT_DELETE_DEFAULT_ADMIN'],
      },
    },
  );
  const action = (
    method: 'post' | 'delete',
    path: string,
    operationId: string,
    summary: string,
    body?: string,
  ): RouteDoc => ({
    ...admin,
    method,
    path,
    operationId,
    summary,
    tag: 'Identities',
    ...(body ? { body: { schema: ref(body), required: false } } : { parsesBody: true }),
    response: emptyResponse('Done.'),
  });
  return [
    ...Object.values(c),
    action('post', '/identities/:id/disable', 'disableIdentity', 'Disable an identity', 'IdentityDisable'),
    action('post', '/identities/:id/enable', 'enableIdentity', 'Enable a disabled or locked identity'),
    action(
      'delete',
      '/identities/:id/mfa',
      'resetIdentityMfa',
      "Remove an identity's TOTP configuration and passkeys; its sessions end (cause mfa-reset)",
    ),
  ];
}

function enrollmentRoutes(): RouteDoc[] {
  const tag = 'Enrollments';
  return [
    {
      ...admin,
      method: 'get',
      path: '/enrollments',
      operationId: 'listEnrollments',
      summary: 'List enrollments',
      tag,
      list: true,
      response: { status: 200, description: 'A page.', schema: listEnvelope(ref('Enrollment')) },
    },
    {
      ...admin,
      method: 'post',
      path: '/enrollments',
      operationId: 'createEnrollment',
      summary: 'Create an enrollment (one per method and identity)',
      tag,
      body: { schema: ref('EnrollmentCreate') },
      response: { status: 201, description: 'Created.', schema: ref('CreatedEnvelope') },
      errors: ['NOT_FOUND', 'CONFLICT'],
    },
    {
      ...admin,
      method: 'get',
      path: '/enrollments/:id',
      operationId: 'getEnrollment',
      summary: 'One enrollment',
      tag,
      response: dataResponse('The detail.', 'Enrollment'),
    },
    {
      ...admin,
      method: 'delete',
      path: '/enrollments/:id',
      operationId: 'deleteEnrollment',
      summary: 'Delete an enrollment',
      tag,
      parsesBody: true,
      response: emptyResponse('Deleted.'),
    },
    {
      ...admin,
      method: 'post',
      path: '/enrollments/:id/refresh',
      operationId: 'refreshEnrollment',
      summary: 'Move the expiry of an enrollment',
      tag,
      body: { schema: ref('EnrollmentRefresh') },
      response: emptyResponse('Refreshed.'),
    },
  ];
}

function authenticatorRoutes(): RouteDoc[] {
  const tag = 'Authenticators';
  return [
    {
      ...admin,
      method: 'get',
      path: '/authenticators',
      operationId: 'listAuthenticators',
      summary: 'List authenticators',
      tag,
      list: true,
      response: { status: 200, description: 'A page.', schema: listEnvelope(ref('Authenticator')) },
    },
    {
      ...admin,
      method: 'get',
      path: '/authenticators/:id',
      operationId: 'getAuthenticator',
      summary: 'One authenticator',
      tag,
      response: dataResponse('The detail.', 'Authenticator'),
    },
    {
      ...admin,
      method: 'delete',
      path: '/authenticators/:id',
      operationId: 'deleteAuthenticator',
      summary: 'Delete an authenticator',
      description:
        "A certificate of a 3rd-party CA goes on that CA's block list: auto CA enrollment refuses it until the block is lifted.",
      tag,
      parsesBody: true,
      response: emptyResponse('Deleted.'),
    },
  ];
}

function policySignerCaRoutes(): RouteDoc[] {
  const policies = crud(
    {
      path: '/auth-policies',
      tag: 'Auth policies',
      singular: 'AuthPolicy',
      plural: 'AuthPolicies',
      noun: 'auth policy',
      nouns: 'auth policies',
      view: 'AuthPolicy',
      create: 'AuthPolicyCreate',
      replace: 'AuthPolicyCreate',
      patch: 'AuthPolicyPatch',
    },
    {
      create: {
        ...unknownRefOrConflict,
        description: 'Omitted fields take the values of a fresh default policy.',
      },
      replace: unknownRefOrConflict,
      patch: unknownRefOrConflict,
      delete: { ...conflict, description: 'Not `default`, nor a policy an identity uses (409).' },
    },
  );
  const signers = crud(
    {
      path: '/external-jwt-signers',
      tag: 'External JWT signers',
      singular: 'ExternalJwtSigner',
      plural: 'ExternalJwtSigners',
      noun: 'external JWT signer',
      nouns: 'external JWT signers',
      view: 'ExternalJwtSigner',
      create: 'ExternalJwtSignerCreate',
      replace: 'ExternalJwtSignerCreate',
      patch: 'ExternalJwtSignerPatch',
    },
    { create: conflict, replace: conflict, patch: conflict, delete: conflict },
  );
  const cas = crud(
    {
      path: '/cas',
      tag: 'CAs',
      singular: 'Ca',
      plural: 'Cas',
      noun: '3rd-party CA',
      nouns: '3rd-party CAs',
      view: 'Ca',
      create: 'CaCreate',
      replace: 'CaReplace',
      patch: 'CaPatch',
    },
    { create: conflict, replace: conflict, patch: conflict },
  );
  const verify: RouteDoc = {
    ...admin,
    method: 'post',
    path: '/cas/:id/verify',
    operationId: 'verifyCa',
    summary: 'Prove possession of the CA with a certificate whose CN is its verificationToken',
    tag: 'CAs',
    body: {
      schema: { type: 'string', description: 'One PEM certificate signed by the CA.' },
      media: ['text/plain', 'application/x-pem-file'],
    },
    response: dataResponse('The verified CA.', 'Ca'),
    errors: ['CONFLICT'],
  };
  return [
    ...Object.values(policies),
    ...Object.values(signers),
    ...Object.values(cas),
    verify,
    ...blockedCertificateRoutes(),
  ];
}

/** The certificates auto CA enrollment refuses because an admin deleted their identity. */
function blockedCertificateRoutes(): RouteDoc[] {
  return [
    {
      ...admin,
      method: 'get',
      path: '/cas/:id/blocked-certificates',
      operationId: 'listBlockedCertificates',
      summary: 'List the certificates of a CA that may not enroll again',
      description:
        'Deleting an identity puts each certificate a 3rd-party CA issued to it here; auto CA ' +
        'enrollment refuses it (401) whatever encoding its signature has. Entries outlive the identity.',
      tag: 'CAs',
      list: true,
      response: { status: 200, description: 'A page.', schema: listEnvelope(ref('BlockedCertificate')) },
    },
    {
      ...admin,
      method: 'delete',
      path: '/cas/:id/blocked-certificates/:entryId',
      operationId: 'unblockCertificate',
      summary: 'Lift a block: the certificate may enroll again, as a new identity',
      tag: 'CAs',
      parsesBody: true,
      response: emptyResponse('Lifted.'),
    },
  ];
}

const API_SESSIONS_DESCRIPTION =
  'Live sessions only, legacy (`svc-session`) and OIDC alike; never a token. `id` is the `z_asid` claim ' +
  'of the access tokens of an OIDC session. `authMethod` and `ipAddress` are null for sessions opened ' +
  'before they were recorded. Filters: `identityId`, `identityName`, `kind`, `authMethod`, `ipAddress`, ' +
  '`isMfaRequired`, `isMfaComplete`, and ranges on `createdAt`, `lastActivityAt`, `expiresAt`.';

/** Who is signed in: the live API sessions, of everyone or of one identity. */
function apiSessionRoutes(): RouteDoc[] {
  const tag = 'API sessions';
  const page = { status: 200, description: 'A page.', schema: listEnvelope(ref('ApiSessionDetail')) };
  return [
    {
      ...admin,
      method: 'get',
      path: '/api-sessions',
      operationId: 'listApiSessions',
      summary: 'List live API sessions',
      description: API_SESSIONS_DESCRIPTION,
      tag,
      list: true,
      response: page,
    },
    {
      ...admin,
      method: 'get',
      path: '/api-sessions/:id',
      operationId: 'getApiSession',
      summary: 'One live API session',
      description: 'An ended or expired session is 404, as an unknown id.',
      tag,
      response: dataResponse('The session.', 'ApiSessionDetail'),
    },
    {
      ...admin,
      method: 'get',
      path: '/identities/:id/api-sessions',
      operationId: 'listIdentityApiSessions',
      summary: "List an identity's live API sessions",
      description: `${API_SESSIONS_DESCRIPTION} An unknown identity is 404.`,
      tag,
      list: true,
      response: page,
    },
  ];
}

/** The OIDC signing keys: the management API is only ever served together with the OIDC layer. */
const keyRoutes: RouteDoc[] = [
  {
    ...admin,
    method: 'get',
    path: '/keys',
    operationId: 'listKeys',
    summary: 'The OIDC signing keys and their state',
    tag: 'Signing keys',
    response: { status: 200, description: 'Every key.', schema: listEnvelope(ref('SigningKey')) },
  },
  {
    ...admin,
    method: 'post',
    path: '/keys/rotate',
    operationId: 'rotateKeys',
    summary: 'Publish a new signing key now; it signs after edge.oidc.keyRotationGrace',
    tag: 'Signing keys',
    response: dataResponse('The new key.', 'SigningKey'),
  },
];

/** The OpenAPI document of `/edge/management/v1`. */
export function managementSpec(): JsonSchema {
  return buildDocument(
    {
      title: 'svc edge management API',
      description:
        'Identities, their API sessions, enrollments, authenticators, auth policies, external JWT signers, ' +
        'CAs, signing keys, the stored audit trail and the running version; every operation but login needs an admin (403 otherwise).',
      basePath: '/edge/management/v1',
    },
    [
      ...sessionRoutes('management'),
      ...identityRoutes(),
      ...apiSessionRoutes(),
      ...managementApiSessionEndingRoutes(),
      ...enrollmentRoutes(),
      ...authenticatorRoutes(),
      ...policySignerCaRoutes(),
      ...keyRoutes,
      ...webhookRoutes(),
      ...auditEventRoutes(),
      ...versionRoutes,
    ],
  );
}
