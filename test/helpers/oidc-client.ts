import { createHash, randomBytes } from 'node:crypto';
import type { HttpsClient, TestResponse } from './https-client.js';

/**
 * A cookie-less OIDC client driven by hand (docs/adr/0005-in-process-cookie-less-resume.md: follow
 * redirects by hand, no cookie jar): authorization request with PKCE → the 303 to the login page → the
 * login POST → the 303 to `redirect_uri?code` → the code exchange. Every step is exported so tests of second
 * factors and API authentication can stop anywhere and look at the raw responses.
 */

export const DEFAULT_REDIRECT_URI = 'http://127.0.0.1:54321/auth/callback';

export interface Pkce {
  verifier: string;
  challenge: string;
}

export function newPkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface AuthorizeOptions {
  redirectUri?: string;
  scope?: string;
  state?: string;
  nonce?: string;
  /** `password`, `cert` or `ext-jwt`. */
  method?: string;
  /** Sent as repeated `configTypes` parameters. */
  configTypes?: string[];
  /** Replace or drop (null) the PKCE parameters. */
  codeChallenge?: string | null;
  codeChallengeMethod?: string | null;
  extraParams?: Record<string, string | string[]>;
  headers?: Record<string, string | string[]>;
}

export interface StartedAuthorization {
  response: TestResponse;
  /** The login page URL (path and query) the authorization request redirected to. */
  loginLocation: string;
  authRequestId: string;
  pkce: Pkce;
  state: string;
  nonce: string;
  redirectUri: string;
}

export function authorizationPath(o: AuthorizeOptions, pkce: Pkce, state: string, nonce: string): string {
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: 'svc',
    redirect_uri: o.redirectUri ?? DEFAULT_REDIRECT_URI,
    scope: o.scope ?? 'openid offline_access',
    state,
    nonce,
  });
  if (o.codeChallenge !== null) params.set('code_challenge', o.codeChallenge ?? pkce.challenge);
  if (o.codeChallengeMethod !== null) params.set('code_challenge_method', o.codeChallengeMethod ?? 'S256');
  if (o.method) params.set('method', o.method);
  for (const ct of o.configTypes ?? []) params.append('configTypes', ct);
  for (const [k, v] of Object.entries(o.extraParams ?? {}))
    for (const value of [v].flat()) params.append(k, value);
  return `/oidc/authorization?${params}`;
}

/** GET /oidc/authorization; expects the 303 to `/oidc/login/<method>?authRequestID=…`. */
export async function startAuthorization(
  client: HttpsClient,
  o: AuthorizeOptions = {},
): Promise<StartedAuthorization> {
  const pkce = newPkce();
  const state = o.state ?? randomBytes(8).toString('hex');
  const nonce = o.nonce ?? randomBytes(8).toString('hex');
  const response = await client.get(authorizationPath(o, pkce, state, nonce), { headers: o.headers });
  const location = response.header('location') ?? '';
  if (response.status !== 303 || !location.includes('/oidc/login/')) {
    throw new Error(
      `authorization did not redirect to a login page: ${response.status} ${location} ${response.text}`,
    );
  }
  const url = new URL(location, client.baseUrl);
  return {
    response,
    loginLocation: url.pathname + url.search,
    authRequestId: url.searchParams.get('authRequestID')!,
    pkce,
    state,
    nonce,
    redirectUri: o.redirectUri ?? DEFAULT_REDIRECT_URI,
  };
}

export interface LoginSubmission {
  /** Credentials and extras, e.g. `{username, password}` or `{}` for a certificate. */
  body?: Record<string, unknown>;
  /** Send the body as a form instead of JSON. */
  form?: boolean;
  headers?: Record<string, string | string[]>;
  /** Defaults to the login page the authorization redirected to. */
  path?: string;
}

/** POSTs the login with `authRequestId` in the body; returns the raw response. */
export function submitLogin(client: HttpsClient, started: StartedAuthorization, s: LoginSubmission = {}) {
  const path = s.path ?? new URL(started.loginLocation, client.baseUrl).pathname;
  const fields = { authRequestId: started.authRequestId, ...s.body };
  if (s.form) {
    const form: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(fields)) form[k] = Array.isArray(v) ? v.map(String) : String(v);
    return client.post(path, { form, headers: s.headers });
  }
  return client.post(path, { body: fields, headers: s.headers });
}

export interface CallbackResult {
  code: string;
  state: string | null;
  iss: string | null;
  location: string;
}

/** Follows Location headers by hand, without cookies, until one points at `redirectUri`. */
export async function followToCallback(
  client: HttpsClient,
  response: TestResponse,
  redirectUri = DEFAULT_REDIRECT_URI,
): Promise<CallbackResult> {
  let current = response;
  for (let hop = 0; hop < 10; hop++) {
    const location = current.header('location');
    if (current.status < 300 || current.status >= 400 || !location) {
      throw new Error(`expected a redirect, got ${current.status} ${current.text}`);
    }
    if (location.startsWith(redirectUri)) {
      const url = new URL(location);
      const code = url.searchParams.get('code');
      if (!code) throw new Error(`callback without a code: ${location}`);
      return { code, state: url.searchParams.get('state'), iss: url.searchParams.get('iss'), location };
    }
    current = await client.get(new URL(location, client.baseUrl).toString());
  }
  throw new Error('too many redirects');
}

export interface TokenSet {
  access_token: string;
  id_token: string;
  refresh_token?: string;
  token_type: string;
  expires_in: number;
  scope?: string;
}

export function exchangeCode(
  client: HttpsClient,
  p: { code: string; verifier: string; redirectUri?: string },
): Promise<TestResponse> {
  return client.post('/oidc/token', {
    form: {
      grant_type: 'authorization_code',
      code: p.code,
      redirect_uri: p.redirectUri ?? DEFAULT_REDIRECT_URI,
      client_id: 'svc',
      code_verifier: p.verifier,
    },
  });
}

export function refreshTokens(
  client: HttpsClient,
  refreshToken: string,
  headers?: Record<string, string>,
): Promise<TestResponse> {
  return client.post('/oidc/token', {
    form: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: 'svc' },
    ...(headers ? { headers } : {}),
  });
}

export interface OidcLoginOptions extends AuthorizeOptions, LoginSubmission {}

export interface OidcLoginResult {
  started: StartedAuthorization;
  callback: CallbackResult;
  tokens: TokenSet;
}

/** The whole flow; throws with the failing step's response when a step does not succeed. */
export async function oidcLogin(client: HttpsClient, o: OidcLoginOptions = {}): Promise<OidcLoginResult> {
  const started = await startAuthorization(client, o);
  const login = await submitLogin(client, started, o);
  const callback = await followToCallback(client, login, started.redirectUri);
  const token = await exchangeCode(client, {
    code: callback.code,
    verifier: started.pkce.verifier,
    redirectUri: started.redirectUri,
  });
  if (token.status !== 200) throw new Error(`code exchange failed: ${token.status} ${token.text}`);
  return { started, callback, tokens: token.body as TokenSet };
}

/** Password login shorthand. */
export function passwordLogin(
  client: HttpsClient,
  username: string,
  password: string,
  o: OidcLoginOptions = {},
) {
  return oidcLogin(client, { method: 'password', ...o, body: { username, password, ...o.body } });
}
