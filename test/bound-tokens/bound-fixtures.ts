import { X509Certificate, createHash } from 'node:crypto';
import * as oc from 'openid-client';
import { generateClientKeyAndCsr } from '../../src/crypto/pki.js';
import type { HttpsClient } from '../helpers/https-client.js';
import type { TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  createIdentity,
  identityDetail,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import { discoverClient, issuerOf } from '../oidc/oidc-fixtures.js';

export const REDIRECT_URI = 'http://localhost:8123/auth/callback';

export interface Device {
  id: string;
  cert: string;
  key: string;
  /** RFC 8705 `x5t#S256` of the certificate, worked out here from its PEM. */
  thumbprint: string;
}

export const thumbprintOf = (certPem: string) =>
  createHash('sha256').update(new X509Certificate(certPem).raw).digest('base64url');

/** Enrolls a new certificate for `id` through a one-time-token enrollment (key and CSR made here). */
export async function enrollOtt(server: TestServer, api: ManagementApi, id: string, name: string) {
  const token = (await identityDetail(api, id)).enrollment.ott.token;
  const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: name });
  const enrolled = await server.client.post(`${CLIENT}/enroll/ott`, { body: { token, clientCsr: csrPem } });
  if (enrolled.status !== 200) throw new Error(`enroll failed: ${enrolled.status} ${enrolled.text}`);
  const cert = enrolled.body.data.cert as string;
  return { cert, key: keyPem, thumbprint: thumbprintOf(cert) };
}

/** A device identity enrolled by OTT: its certificate comes from our PKI. */
export async function enrolledDevice(
  server: TestServer,
  api: ManagementApi,
  name: string,
  extra: Record<string, unknown> = {},
): Promise<Device> {
  const id = await createIdentity(api, {
    name,
    type: 'Device',
    isAdmin: false,
    enrollment: { ott: true },
    ...extra,
  });
  return { id, ...(await enrollOtt(server, api, id, name)) };
}

/**
 * openid-client whose every request (discovery, token, userinfo, API calls) goes over an undici
 * Agent presenting `tls` as its client certificate; none given: no certificate.
 */
export async function deviceClient(server: TestServer, tls: { cert?: string; key?: string } = {}) {
  return discoverClient(server, issuerOf(server), tls);
}

/**
 * The authorization request and the certificate login over `mtls` (the device's own connection),
 * up to the redirect with the code; returns what the code exchange needs.
 */
export async function certLoginToCallback(
  server: TestServer,
  config: oc.Configuration,
  mtls: HttpsClient,
  scope = 'openid offline_access',
) {
  const verifier = oc.randomPKCECodeVerifier();
  const state = oc.randomState();
  const url = oc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope,
    code_challenge: await oc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    method: 'cert',
    state,
  });
  const start = await mtls.get(url.pathname + url.search);
  const loginUrl = new URL(start.header('location')!, server.url);
  const login = await mtls.post(loginUrl.pathname, {
    body: { authRequestId: loginUrl.searchParams.get('authRequestID') },
  });
  if (login.status !== 303) throw new Error(`cert login failed: ${login.status} ${login.text}`);
  return { callback: new URL(login.header('location')!), verifier, state };
}

/** The code exchange of `certLoginToCallback`'s result with openid-client. */
export function exchange(
  config: oc.Configuration,
  done: Awaited<ReturnType<typeof certLoginToCallback>>,
): ReturnType<typeof oc.authorizationCodeGrant> {
  return oc.authorizationCodeGrant(config, done.callback, {
    pkceCodeVerifier: done.verifier,
    expectedState: done.state,
  });
}

/** The OAuth error an openid-client call failed with (`invalid_grant`, …), with its HTTP status. */
export async function oauthErrorOf(call: Promise<unknown>): Promise<{ error: string; status: number }> {
  try {
    await call;
  } catch (err) {
    const e = err as { error?: string; status?: number; code?: string };
    return { error: e.error ?? e.code ?? String(err), status: e.status ?? 0 };
  }
  throw new Error('the call succeeded');
}
