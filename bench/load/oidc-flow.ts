import { createHash, randomBytes } from 'node:crypto';
import type { BenchClient, BenchResponse } from './http-client.js';

/**
 * The cookie-less Authorization Code + PKCE login a CLI performs, the same request for request
 * against the service and the bare oidc-provider baseline: authorization → 303 to the login page
 * → login POST → follow the 303s by hand to `redirect_uri?code` → code exchange.
 */

const REDIRECT_URI = 'http://127.0.0.1:54321/auth/callback';
const MAX_HOPS = 5;

export interface Credentials {
  username: string;
  password: string;
}

export interface Tokens {
  accessToken: string;
  refreshToken: string;
}

function fail(step: string, res: BenchResponse): never {
  throw new Error(`${step}: HTTP ${res.status} ${res.location ?? ''} ${res.text.slice(0, 300)}`);
}

function authorizationPath(challenge: string): string {
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: 'svc',
    redirect_uri: REDIRECT_URI,
    // offline_access without prompt: each target adds `consent` itself, as the service does.
    scope: 'openid offline_access',
    state: randomBytes(8).toString('hex'),
    nonce: randomBytes(8).toString('hex'),
    code_challenge: challenge,
    code_challenge_method: 'S256',
    method: 'password',
  });
  return `/oidc/authorization?${params}`;
}

async function followToCode(client: BenchClient, res: BenchResponse): Promise<string> {
  let current = res;
  for (let hop = 0; hop < MAX_HOPS; hop++) {
    if (current.status < 300 || current.status >= 400 || !current.location) fail('login', current);
    if (current.location.startsWith(REDIRECT_URI)) {
      const code = new URL(current.location).searchParams.get('code');
      if (!code) fail('callback without a code', current);
      return code;
    }
    const next = new URL(current.location, client.origin);
    if (next.origin !== client.origin) fail('redirect off the target', current);
    current = await client.get(next.pathname + next.search);
  }
  fail('too many redirects', current);
}

function tokensOf(step: string, res: BenchResponse): Tokens {
  if (res.status !== 200) fail(step, res);
  const body = JSON.parse(res.text) as { access_token?: string; refresh_token?: string };
  if (!body.access_token || !body.refresh_token) fail(`${step} without tokens`, res);
  return { accessToken: body.access_token, refreshToken: body.refresh_token };
}

export async function passwordLogin(client: BenchClient, user: Credentials): Promise<Tokens> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const authorization = await client.get(authorizationPath(challenge));
  if (authorization.status !== 303 || !authorization.location) fail('authorization', authorization);
  const loginPage = new URL(authorization.location, client.origin);
  const authRequestId = loginPage.searchParams.get('authRequestID');
  if (!authRequestId) fail('authorization without authRequestID', authorization);
  const login = await client.postJson(loginPage.pathname, { authRequestId, ...user });
  const code = await followToCode(client, login);
  const token = await client.postForm('/oidc/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT_URI,
    client_id: 'svc',
    code_verifier: verifier,
  });
  return tokensOf('code exchange', token);
}

/** One refresh-token grant; the service and the baseline both rotate, so the next call needs the new one. */
export async function refreshGrant(client: BenchClient, refreshToken: string): Promise<Tokens> {
  const res = await client.postForm('/oidc/token', {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: 'svc',
  });
  return tokensOf('refresh', res);
}
