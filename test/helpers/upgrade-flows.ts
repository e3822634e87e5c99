import * as oc from 'openid-client';
import type { HttpsClient } from './https-client.js';
import { DEFAULT_REDIRECT_URI } from './oidc-client.js';

const MGMT = '/edge/management/v1';
const CLIENT = '/edge/client/v1';

/** Where a step goes: one process's own port, or the front. */
export interface Hop {
  client: HttpsClient;
  oidcFetch: oc.CustomFetch;
}

export interface PasswordUser {
  id: string;
  name: string;
  password: string;
}

function expectStatus(what: string, res: { status: number; text: string }, status: number): void {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${res.text}`);
}

/** A password identity: created on `create`, its enrollment read and completed on `enroll`. */
export async function createPasswordUser(
  name: string,
  admin: Record<string, string>,
  create: HttpsClient,
  enroll: HttpsClient,
): Promise<PasswordUser> {
  const created = await create.post(`${MGMT}/identities`, {
    headers: admin,
    body: { name, isAdmin: false, enrollment: { updb: name } },
  });
  expectStatus(`creating ${name}`, created, 201);
  const id = created.body.data.id as string;
  const detail = await enroll.get(`${MGMT}/identities/${id}`, { headers: admin });
  expectStatus(`reading ${name}`, detail, 200);
  const password = `Pw-${name}-1234`;
  const enrolled = await enroll.post(
    `${CLIENT}/enroll/updb?token=${detail.body.data.enrollment.updb.token}`,
    {
      body: { password },
    },
  );
  expectStatus(`enrolling ${name}`, enrolled, 200);
  return { id, name, password };
}

/** The provider's configuration as openid-client discovers it through `hop`. */
export function discover(issuer: string, hop: Hop): Promise<oc.Configuration> {
  return oc.discovery(new URL(issuer), 'svc', undefined, oc.None(), { [oc.customFetch]: hop.oidcFetch });
}

/** Sends openid-client's next calls of `config` through `hop`. */
export function via(config: oc.Configuration, hop: Hop): oc.Configuration {
  config[oc.customFetch] = hop.oidcFetch;
  return config;
}

/**
 * The authorization code flow with PKCE, hop by hop: discovery, the authorization request and
 * the code exchange through `start`, the login itself through `finish` — a login begun on one
 * process and completed on another.
 */
export async function loginAcross(
  issuer: string,
  user: PasswordUser,
  start: Hop,
  finish: Hop,
): Promise<{ config: oc.Configuration; tokens: oc.TokenEndpointResponse & oc.TokenEndpointResponseHelpers }> {
  const config = await discover(issuer, start);
  const verifier = oc.randomPKCECodeVerifier();
  const state = oc.randomState();
  const url = oc.buildAuthorizationUrl(config, {
    redirect_uri: DEFAULT_REDIRECT_URI,
    scope: 'openid offline_access',
    code_challenge: await oc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    method: 'password',
    state,
  });
  const started = await start.client.get(url.pathname + url.search);
  expectStatus('the authorization request', started, 303);
  const loginUrl = new URL(started.header('location')!, issuer);
  const login = await finish.client.post(loginUrl.pathname, {
    body: {
      authRequestId: loginUrl.searchParams.get('authRequestID'),
      username: user.name,
      password: user.password,
    },
  });
  expectStatus('the login', login, 303);
  const tokens = await oc.authorizationCodeGrant(via(config, start), new URL(login.header('location')!), {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  return { config, tokens };
}

/** The legacy API login (`POST /edge/client/v1/authenticate?method=password`): session id and token. */
export async function apiLogin(
  client: HttpsClient,
  user: PasswordUser,
): Promise<{ id: string; token: string }> {
  const res = await client.post(`${CLIENT}/authenticate?method=password`, {
    body: { username: user.name, password: user.password },
  });
  expectStatus(`the API login of ${user.name}`, res, 200);
  return { id: res.body.data.id, token: res.body.data.token };
}

/** GET /edge/client/v1/current-identity with a bearer token or an API session: its status and id. */
export async function whoAmI(
  client: HttpsClient,
  credential: { bearer: string } | { session: string },
): Promise<{ status: number; id?: string }> {
  const headers: Record<string, string> =
    'bearer' in credential
      ? { authorization: `Bearer ${credential.bearer}` }
      : { 'svc-session': credential.session };
  const res = await client.get(`${CLIENT}/current-identity`, { headers });
  return { status: res.status, id: res.body?.data?.id };
}
