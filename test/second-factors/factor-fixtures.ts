import { createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
import { generateRootCa } from '../../src/crypto/pki.js';
import type { HttpsClient, TestResponse } from '../helpers/https-client.js';
import {
  exchangeCode,
  followToCallback,
  startAuthorization,
  submitLogin,
  type StartedAuthorization,
  type TokenSet,
} from '../helpers/oidc-client.js';
import type { TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { createUser, sessionOf, type TestUser } from '../mfa/mfa-fixtures.js';
import type { ManagementApi } from '../identities/identity-fixtures.js';

export { createUser, type TestUser };

/** The TOTP query of the OIDC flow, exactly as clients read it. */
export const totpQuery = (isTotpEnrolled: boolean) => ({
  typeId: 'MFA',
  format: 'alphaNumeric',
  httpMethod: 'POST',
  httpUrl: '/oidc/login/totp',
  minLength: 6,
  maxLength: 6,
  provider: 'svc',
  isTotpEnrolled,
});

/** A policy through the management API: the default one plus `secondary`. */
export async function createPolicy(
  api: ManagementApi,
  name: string,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await api.post('/auth-policies', { body: { name, ...body } });
  if (res.status !== 201) throw new Error(`policy create failed: ${res.status} ${res.text}`);
  return res.body.data.id as string;
}

/** Verified TOTP for `user` through the self-service endpoints, at time step `step`. */
export async function enrollTotp(server: TestServer, user: TestUser) {
  const headers = await sessionOf(server, user);
  const started = await server.client.post('/edge/client/v1/current-identity/mfa', { headers });
  if (started.status !== 201) throw new Error(`mfa start failed: ${started.status} ${started.text}`);
  const step = timeStepAt();
  const url = started.body.data.provisioningUrl as string;
  const verify = await server.client.post('/edge/client/v1/current-identity/mfa/verify', {
    headers,
    body: { code: await totpCode(url, step) },
  });
  if (verify.status !== 200) throw new Error(`mfa verify failed: ${verify.status} ${verify.text}`);
  return { url, recoveryCodes: started.body.data.recoveryCodes as string[], step };
}

/** A password login that the test expects to stop at the second factors (200). */
export async function partialLogin(client: HttpsClient, user: TestUser, headers?: Record<string, string>) {
  const started = await startAuthorization(client, { method: 'password' });
  const response = await submitLogin(client, started, {
    body: { username: user.username, password: user.password },
    headers,
  });
  return { started, response };
}

/** Follows a completing step's 303 to the callback and exchanges the code. */
export async function tokensFrom(
  client: HttpsClient,
  started: StartedAuthorization,
  response: TestResponse,
): Promise<TokenSet> {
  const callback = await followToCallback(client, response, started.redirectUri);
  const token = await exchangeCode(client, { code: callback.code, verifier: started.pkce.verifier });
  if (token.status !== 200) throw new Error(`code exchange failed: ${token.status} ${token.text}`);
  return token.body as TokenSet;
}

export const postTotp = (client: HttpsClient, authRequestId: string, code: string, headers = {}) =>
  client.post('/oidc/login/totp', { body: { id: authRequestId, code }, headers });

/** The exact WWW-Authenticate value of an external JWT challenge. */
export function extJwtChallenge(error: 'missing' | 'invalid' | 'expired', id: string, issuer: string) {
  const description = {
    missing: 'no matching token was provided',
    invalid: 'token is invalid',
    expired: 'token expired',
  }[error];
  return `Bearer realm="svc-secondary-ext-jwt", error="${error}", error_description="${description}", id="${id}", issuer="${issuer}"`;
}

/** An external IdP: a signer registered through the API and a key to mint its JWTs. */
export async function createIdp(api: ManagementApi, name: string, extra: Record<string, unknown> = {}) {
  const key = await generateRootCa({ commonName: `${name} key` });
  const issuer = `https://${name}.idp.example`;
  const audience = `${name}-audience`;
  const res = await api.post('/external-jwt-signers', {
    body: { name, issuer, audience, certPem: key.certPem, ...extra },
  });
  if (res.status !== 201) throw new Error(`signer create failed: ${res.status} ${res.text}`);
  const privateKey = createPrivateKey(key.keyPem);
  return {
    id: res.body.data.id as string,
    issuer,
    /** A JWT for `sub`; `expiresIn` negative for an expired one; `iss`/`aud` overridable. */
    async jwt(sub: string, o: { expiresIn?: number; iss?: string; aud?: string } = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({})
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuer(o.iss ?? issuer)
        .setAudience(o.aud ?? audience)
        .setSubject(sub)
        .setIssuedAt(now - 600)
        .setExpirationTime(now + (o.expiresIn ?? 300))
        .sign(privateKey);
    },
  };
}

export type Idp = Awaited<ReturnType<typeof createIdp>>;

/** `Authorization` carrying each of `tokens` as a Bearer value, in one header. */
export const bearer = (...tokens: string[]) => ({
  authorization: tokens.map((t) => `Bearer ${t}`).join(', '),
});

/** What the secondary external JWT helpers work with; read when a helper runs (set up in beforeAll). */
export interface ExtJwtSetup {
  server: TestServer;
  api: ManagementApi;
  idp: Idp;
  /** The policy requiring `idp`'s JWT, for users made without another. */
  policy: string;
}

/** Users whose externalId is the subject of the IdP's JWTs, their JWTs and their completed logins. */
export function extJwtHelpers(setup: () => ExtJwtSetup) {
  /** A password user of `policyId` whose externalId is the subject of its IdP JWTs. */
  async function userOf(name: string, policyId = setup().policy): Promise<TestUser> {
    const { server, api } = setup();
    const user = await createUser(server, name, policyId);
    const patched = await api.patch(`/identities/${user.id}`, { body: { externalId: `ext-${name}` } });
    if (patched.status !== 200) throw new Error(`patch failed: ${patched.status} ${patched.text}`);
    return user;
  }
  const jwtOf = (user: TestUser, o?: Parameters<Idp['jwt']>[1]) => setup().idp.jwt(`ext-${user.name}`, o);

  /** A login completed with password and secondary JWT; the code exchanged without the JWT. */
  async function loggedIn(name: string) {
    const { server } = setup();
    const user = await userOf(name);
    const jwt = await jwtOf(user);
    const { started, response } = await partialLogin(server.client, user, bearer(jwt));
    if (response.status !== 303)
      throw new Error(`login did not complete: ${response.status} ${response.text}`);
    return { user, jwt, tokens: await tokensFrom(server.client, started, response) };
  }

  return { userOf, jwtOf, loggedIn };
}
