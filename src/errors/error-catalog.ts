/**
 * Every error code the Edge APIs and the OIDC login endpoints answer with.
 * Status and default message live here so that routes only name the code.
 */
export const errorCatalog = {
  COULD_NOT_VALIDATE: { status: 400, message: 'the supplied request contains invalid fields' },
  INVALID_AUTH_REQUEST: {
    status: 400,
    message: 'the authentication request is unknown, expired or out of order',
  },
  INVALID_TOTP_CODE: { status: 400, message: 'the TOTP code supplied was invalid' },
  MFA_INVALID_TOKEN: { status: 400, message: 'the MFA code supplied was invalid' },
  INVALID_ENROLLMENT_TOKEN: { status: 400, message: 'the enrollment token is not valid' },
  ENROLLMENT_EXPIRED: { status: 400, message: 'the enrollment token has expired' },
  INVALID_ENROLL_METHOD: { status: 400, message: 'the enrollment method does not match the token' },
  // OTTCA completion (the names OpenZiti uses, so its clients understand them).
  ENROLLMENT_CA_NOT_VALID: {
    status: 400,
    message: 'the CA of this enrollment is not verified or does not allow OTTCA enrollment',
  },
  CERTIFICATE_FAILED_VALIDATION: {
    status: 400,
    message: 'the client certificate was missing or not issued by the enrollment CA',
  },
  CANNOT_DELETE_DEFAULT_ADMIN: { status: 400, message: 'the default admin cannot be deleted' },
  INVALID_AUTH: { status: 401, message: 'the authentication request failed' },
  PASSKEY_REGISTRATION_FAILED: {
    status: 400,
    message: 'the passkey response could not be verified; request new options and try again',
  },
  UNAUTHORIZED: {
    status: 401,
    message:
      'the request could not be completed: the session is not authorized or the credentials are invalid',
  },
  REAUTHENTICATION_REQUIRED: {
    status: 403,
    message:
      'this change needs a recent sign-in: sign in again, or send the password (`password`) or a TOTP code (`code`) with the request',
  },
  FORBIDDEN: { status: 403, message: 'the supplied session does not have the correct access rights' },
  ACCOUNT_SIGN_IN_REQUIRED: { status: 401, message: 'sign in to the account page first' },
  ACCOUNT_SIGN_IN_FAILED: {
    status: 400,
    message: 'the sign-in could not be completed: it is unknown, expired or was already used',
  },
  CSRF_REFUSED: {
    status: 403,
    message: 'the form did not come from this page: reload the page and try again',
  },
  SESSION_LIMIT_REACHED: {
    status: 403,
    message: 'the identity already holds as many sessions as its auth policy allows; end one and retry',
  },
  NOT_FOUND: { status: 404, message: 'the resource requested was not found or is no longer available' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'the method is not allowed on this resource' },
  NOT_ACCEPTABLE: { status: 406, message: 'none of the requested media types can be produced' },
  CONFLICT: { status: 409, message: 'the resource conflicts with an existing one' },
  PASSKEYS_UNAVAILABLE: {
    status: 409,
    message: 'passkeys are not available at this address',
  },
  MFA_EXISTS: { status: 409, message: 'an MFA configuration already exists or is in progress' },
  DELIVERY_ALREADY_SUCCEEDED: {
    status: 409,
    message: 'the webhook delivery already succeeded; it is not sent again',
  },
  REQUEST_ENTITY_TOO_LARGE: { status: 413, message: 'the request body is larger than 1 MiB' },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message:
      'the content type is not supported (supported: application/json, application/x-www-form-urlencoded)',
  },
  RATE_LIMITED: { status: 429, message: 'too many requests; retry later' },
  SERVER_ERROR: { status: 500, message: 'the server encountered an unexpected error' },
  SERVICE_UNAVAILABLE: { status: 503, message: 'the service is not ready' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalog;
