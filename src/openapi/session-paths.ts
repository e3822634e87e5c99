import { dataEnvelope } from './components.js';
import { ref } from './json-schema.js';
import type { RouteDoc } from './operations.js';

/** `{"data":{},"meta":{}}`: update, patch, delete and other answers without content. */
export const emptyResponse = (description: string) => ({
  status: 200,
  description,
  schema: ref('EmptyEnvelope'),
});

export const dataResponse = (description: string, schemaName: string, status = 200) => ({
  status,
  description,
  schema: dataEnvelope(ref(schemaName)),
});

/** Routes both Edge APIs mount: legacy login, its TOTP step, the caller, and this document. */
export function sessionRoutes(api: 'client' | 'management'): RouteDoc[] {
  return [
    {
      method: 'post',
      path: '/authenticate',
      operationId: 'authenticate',
      summary: 'Log in and open a legacy API session',
      description:
        '`method=password` takes `username` and `password`; `method=cert` reads the TLS client certificate; ' +
        '`method=ext-jwt` reads `Authorization: Bearer <external JWT>` (a missing or unusable JWT is ' +
        'answered 401 with one `svc-primary-ext-jwt` challenge per candidate signer). When the policy ' +
        'requires TOTP, `authQueries` names the MFA step and only the MFA endpoints answer until it is done. ' +
        '`method=passkey` (an extension beyond the specification) takes `ceremonyId` and `passkey` (see ' +
        '`POST /authenticate/passkey/options`); a passkey with user verification is two factors, so no MFA ' +
        'step follows, and refused passkey sign-ins are counted per client address (429 past the limit). ' +
        "Under the policy's session limit (`sessions` of the auth policy) a complete login over the limit " +
        'ends the oldest session (`evictOldest`) or is refused 403 `SESSION_LIMIT_REACHED` (`refuse`).',
      tag: 'Authentication',
      access: 'anonymous',
      rateLimited: true,
      parameters: [
        {
          name: 'method',
          in: 'query',
          required: true,
          schema: { type: 'string', enum: ['password', 'cert', 'ext-jwt', 'passkey'] },
        },
      ],
      body: { schema: ref('LoginBody'), required: false },
      response: dataResponse('The new session; send its token in `svc-session`.', 'ApiSession'),
      errors: ['INVALID_AUTH', 'UNAUTHORIZED', 'SESSION_LIMIT_REACHED', 'PASSKEYS_UNAVAILABLE'],
    },
    {
      method: 'post',
      path: '/authenticate/passkey/options',
      operationId: 'authenticatePasskeyOptions',
      summary: 'Start a passwordless passkey login',
      description:
        'Passkeys are an extension beyond the specification. The request options of a passwordless ' +
        'sign-in (empty `allowCredentials`, `userVerification: "required"`) and a fresh `ceremonyId`, ' +
        'which `POST /authenticate?method=passkey` sends back with the assertion within 5 minutes; the ' +
        'challenge is good for that one login. 409 `PASSKEYS_UNAVAILABLE` where browsers would refuse ' +
        'passkeys (an IP address, a name outside `webauthn.rpId`).',
      tag: 'Authentication',
      access: 'anonymous',
      rateLimited: true,
      response: dataResponse('The options and the ceremony id.', 'PasskeyCeremony'),
      errors: ['PASSKEYS_UNAVAILABLE'],
    },
    {
      method: 'post',
      path: '/authenticate/mfa',
      operationId: 'authenticateMfa',
      summary: 'Complete the TOTP step of the current legacy session',
      tag: 'Authentication',
      access: 'authenticated',
      rateLimited: true,
      body: { schema: ref('MfaStep') },
      description:
        "The session then counts against its policy's session limit: over it, the oldest session ends " +
        '(`evictOldest`) or the step is refused 403 `SESSION_LIMIT_REACHED` (`refuse`) and the session ' +
        'keeps waiting for it. A `passkey` instead of the `code` (an extension beyond the specification) ' +
        "adds `pop` and `mfa` to the session's amr; refused assertions count with the wrong codes of the " +
        'identity (5 in 15 minutes, then 429).',
      response: emptyResponse('The session is complete.'),
      errors: ['MFA_INVALID_TOKEN', 'SESSION_LIMIT_REACHED', 'PASSKEYS_UNAVAILABLE'],
    },
    {
      method: 'post',
      path: '/authenticate/mfa/passkey/options',
      operationId: 'authenticateMfaPasskeyOptions',
      summary: "Options for paying the MFA step with one of the caller's passkeys",
      description:
        'Passkeys are an extension beyond the specification. The request options of an assertion of ' +
        "one of the identity's passkeys, its challenge bound to the caller's API session for 5 minutes; " +
        'send the assertion as `passkey` to `POST /authenticate/mfa`. 404 when the identity has no passkey.',
      tag: 'Authentication',
      access: 'authenticated',
      rateLimited: true,
      response: dataResponse('The request options.', 'PasskeyAssertionOptions'),
      errors: ['NOT_FOUND', 'PASSKEYS_UNAVAILABLE'],
    },
    {
      method: 'get',
      path: '/current-identity',
      operationId: 'getCurrentIdentity',
      summary: "The caller's identity",
      tag: 'Current identity',
      access: 'authenticated',
      response: dataResponse('The identity detail.', 'Identity'),
    },
    {
      method: 'get',
      path: '/spec',
      operationId: 'getSpec',
      summary: `This document: the OpenAPI 3.1 description of the ${api} API`,
      tag: 'Specification',
      access: 'anonymous',
      response: {
        status: 200,
        description: 'An OpenAPI 3.1 document.',
        schema: { type: 'object', required: ['openapi', 'info', 'paths'] },
      },
    },
  ];
}
