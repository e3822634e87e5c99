/**
 * Where oidc-provider is mounted: its endpoints, the issuer URLs and our login routes are under
 * it (oidc-dispatch.ts strips it before handing a request to the provider).
 */
export const OIDC_MOUNT = '/oidc';

/** Everything of our OIDC login lives under the provider's mount (docs/architecture.md). */
export const LOGIN_PREFIX = `${OIDC_MOUNT}/login`;

/**
 * Every `/oidc/login/*` endpoint, once: the provider's `loginUrl` and discovery document, the
 * routes, the HTML pages' form actions and the `httpUrl` of the TOTP auth query all read it.
 */
export const LOGIN_PATHS = {
  /** The password page; `password` is its alias. */
  username: `${LOGIN_PREFIX}/username`,
  password: `${LOGIN_PREFIX}/password`,
  cert: `${LOGIN_PREFIX}/cert`,
  extJwt: `${LOGIN_PREFIX}/ext-jwt`,
  authQueries: `${LOGIN_PREFIX}/auth-queries`,
  totp: `${LOGIN_PREFIX}/totp`,
  totpEnroll: `${LOGIN_PREFIX}/totp/enroll`,
  totpEnrollVerify: `${LOGIN_PREFIX}/totp/enroll/verify`,
  /**
   * Passkeys (an extension beyond the specification): GET the request options, POST the assertion;
   * the primary step before a primary login, else the second factor.
   */
  passkey: `${LOGIN_PREFIX}/passkey`,
  /** A passkey registered mid-flow when the policy requires one and the identity has none. */
  passkeyRegister: `${LOGIN_PREFIX}/passkey/register`,
  /** The one script of the login pages, which runs the browser's passkey ceremony. */
  passkeyScript: `${LOGIN_PREFIX}/passkey.js`,
} as const;

/** A primary login method's name (`LoginState.method`, the `method` hint). */
export type PrimaryMethod = 'password' | 'cert' | 'ext-jwt' | 'passkey';

/** The primary login pages: the path, the page it shows and the method its POST runs. */
export const PRIMARY_LOGIN_PATHS: {
  path: string;
  page: 'username' | 'cert' | 'ext-jwt';
  method: Exclude<PrimaryMethod, 'passkey'>;
}[] = [
  { path: LOGIN_PATHS.username, page: 'username', method: 'password' },
  { path: LOGIN_PATHS.password, page: 'username', method: 'password' },
  { path: LOGIN_PATHS.cert, page: 'cert', method: 'cert' },
  { path: LOGIN_PATHS.extJwt, page: 'ext-jwt', method: 'ext-jwt' },
];

/** The page an authorization request's `method` hint asks for. */
export const LOGIN_PATH_BY_HINT: Record<string, string> = {
  password: LOGIN_PATHS.username,
  username: LOGIN_PATHS.username,
  cert: LOGIN_PATHS.cert,
  'ext-jwt': LOGIN_PATHS.extJwt,
  // A browser gets the sign-in page with the passkey offered; any other client the request options.
  passkey: LOGIN_PATHS.passkey,
};

/** The login endpoints as absolute URLs of `issuer` (`https://<address>/oidc`), for discovery. */
export function loginEndpointsOf(issuer: string) {
  const at = (path: string) => `${issuer}${path.slice(OIDC_MOUNT.length)}`;
  return {
    password: at(LOGIN_PATHS.username),
    cert: at(LOGIN_PATHS.cert),
    ext_jwt: at(LOGIN_PATHS.extJwt),
    totp: at(LOGIN_PATHS.totp),
    totp_enroll: at(LOGIN_PATHS.totpEnroll),
    totp_enroll_verify: at(LOGIN_PATHS.totpEnrollVerify),
    auth_queries: at(LOGIN_PATHS.authQueries),
    passkey: at(LOGIN_PATHS.passkey),
    passkey_register: at(LOGIN_PATHS.passkeyRegister),
  };
}
