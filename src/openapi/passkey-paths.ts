import { dataEnvelope } from './components.js';
import { ref } from './json-schema.js';
import type { RouteDoc } from './operations.js';
import { dataResponse, emptyResponse } from './session-paths.js';

const PASSKEYS = '/current-identity/passkeys';
const TAG = 'Passkeys';
const EXTENSION = 'Passkeys (WebAuthn) are an extension beyond the service specification.';
const RECENT =
  'Needs a sign-in within the last 5 minutes, or the password (`password`) or a TOTP or recovery code ' +
  '(`code`) in the body, checked and counted as at a login; otherwise 403 `REAUTHENTICATION_REQUIRED`. ' +
  'At an IP address, a host outside `webauthn.rpId`, or an rpId other than localhost without `tls.cert`: ' +
  '409 `PASSKEYS_UNAVAILABLE`, naming the setting.';

const RECENT_CHANGE =
  'Needs a sign-in within the last 5 minutes, or the password (`password`) or a TOTP or recovery code ' +
  '(`code`) in the body, checked and counted as at a login; otherwise 403 `REAUTHENTICATION_REQUIRED`.';
const CHANGE_ERRORS = [
  'REAUTHENTICATION_REQUIRED',
  'INVALID_AUTH',
  'MFA_INVALID_TOKEN',
  'RATE_LIMITED',
] as const;

/** The caller's own passkeys. */
export function passkeyRoutes(): RouteDoc[] {
  return [
    {
      method: 'post',
      path: `${PASSKEYS}/options`,
      operationId: 'startPasskeyRegistration',
      summary: 'Creation options for registering a passkey',
      description:
        `${EXTENSION} Attestation none, resident key and user verification preferred; the caller's passkeys ` +
        'are excluded; the user handle is random, the same for every passkey of the identity. The ' +
        'challenge is bound to the calling API session and valid for 5 minutes. `warnings` names ' +
        `passkeys registered for another rpId. ${RECENT}`,
      tag: TAG,
      access: 'authenticated',
      body: { schema: ref('PasskeyOptionsBody'), required: false },
      response: dataResponse('The options for navigator.credentials.create, and warnings.', 'PasskeyOptions'),
      errors: [
        'REAUTHENTICATION_REQUIRED',
        'PASSKEYS_UNAVAILABLE',
        'INVALID_AUTH',
        'MFA_INVALID_TOKEN',
        'RATE_LIMITED',
      ],
    },
    {
      method: 'post',
      path: PASSKEYS,
      operationId: 'registerPasskey',
      summary: 'Register a passkey: the response of navigator.credentials.create',
      description:
        `${EXTENSION} The response must answer options of the same API session, within 5 minutes, once; ` +
        'from one of `webauthn.origins`, for `webauthn.rpId`. A response that does not verify: 400 ' +
        '`PASSKEY_REGISTRATION_FAILED` (so is a credential another identity holds); one the caller already ' +
        `registered: 409 \`CONFLICT\`. ${RECENT}`,
      tag: TAG,
      access: 'authenticated',
      body: { schema: ref('PasskeyRegister') },
      response: dataResponse('The passkey.', 'PasskeyCreated', 201),
      errors: [
        'PASSKEY_REGISTRATION_FAILED',
        'CONFLICT',
        'REAUTHENTICATION_REQUIRED',
        'PASSKEYS_UNAVAILABLE',
        'INVALID_AUTH',
        'MFA_INVALID_TOKEN',
        'RATE_LIMITED',
      ],
    },
    {
      method: 'get',
      path: PASSKEYS,
      operationId: 'listPasskeys',
      summary: "The caller's passkeys",
      description: EXTENSION,
      tag: TAG,
      access: 'authenticated',
      response: {
        status: 200,
        description: 'The passkeys, oldest first.',
        schema: dataEnvelope({ type: 'array', items: ref('Passkey') }),
      },
    },
    {
      method: 'patch',
      path: `${PASSKEYS}/:id`,
      operationId: 'renamePasskey',
      summary: 'Rename one of the caller’s passkeys',
      description: `${EXTENSION} Another identity's passkey is 404, as an unknown id is. ${RECENT_CHANGE}`,
      tag: TAG,
      access: 'authenticated',
      body: { schema: ref('PasskeyRename') },
      response: dataResponse('The passkey.', 'Passkey'),
      errors: [...CHANGE_ERRORS],
    },
    {
      method: 'delete',
      path: `${PASSKEYS}/:id`,
      operationId: 'deletePasskey',
      summary: 'Remove one of the caller’s passkeys',
      description: `${EXTENSION} Another identity's passkey is 404, as an unknown id is. ${RECENT_CHANGE}`,
      tag: TAG,
      access: 'authenticated',
      parsesBody: true,
      body: { schema: ref('PasskeyRemoveBody'), required: false },
      response: emptyResponse('Removed.'),
      errors: [...CHANGE_ERRORS],
    },
  ];
}
