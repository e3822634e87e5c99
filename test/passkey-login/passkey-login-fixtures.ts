import { newId } from '../../src/crypto/random.js';
import type { AuditEvent } from '../../src/services/audit-trail.js';
import type { HttpsClient, TestResponse } from '../helpers/https-client.js';
import { startAuthorization, submitLogin, type StartedAuthorization } from '../helpers/oidc-client.js';
import { createSoftAuthenticator, type SoftAuthenticator } from '../helpers/soft-authenticator.js';
import type { TestServer } from '../helpers/test-server.js';
import type { TestUser } from '../mfa/mfa-fixtures.js';

/**
 * Passkeys work only at a DNS name (webauthn-settings.ts): the tests reach the controller as
 * `localhost`, the relying party every test server derives, and its authenticators answer for
 * that origin.
 */
export const localUrl = (server: TestServer) => server.url.replace('127.0.0.1', 'localhost');

/** A cookie-less client of the controller at `https://localhost:<port>`. */
export const localClient = (server: TestServer): HttpsClient => server.newClient({}, localUrl(server));

/** A soft authenticator answering for the controller's relying party (`localhost`). */
export const authenticatorFor = (server: TestServer): SoftAuthenticator =>
  createSoftAuthenticator({ origin: new URL(localUrl(server)).origin, rpId: 'localhost' });

/** Registers a passkey of `user` on `authenticator` through the passkey service (the account pages' part). */
export async function registerPasskey(
  server: TestServer,
  user: Pick<TestUser, 'id' | 'name'>,
  authenticator = authenticatorFor(server),
): Promise<SoftAuthenticator> {
  const { passkeys, webauthn } = server.app.services;
  const ceremony = { boundTo: `test-${newId()}` };
  const { options } = await passkeys.registrationOptions(user, ceremony, webauthn.site);
  const response = await authenticator.register(options as never);
  await passkeys.register(user.id, ceremony, webauthn.site, { name: 'laptop', response });
  return authenticator;
}

/** The passkey member of an MFA auth query of the OIDC login. */
export const PASSKEY_MEMBER = { httpMethod: 'POST', httpUrl: '/oidc/login/passkey' };

/** `GET /oidc/login/passkey`: the request options of the auth request's next passkey assertion. */
export const passkeyOptions = (client: HttpsClient, authRequestId: string) =>
  client.get(`/oidc/login/passkey?authRequestID=${encodeURIComponent(authRequestId)}`);

/** `POST /oidc/login/passkey` with an assertion (or anything else as `passkey`). */
export const postPasskey = (
  client: HttpsClient,
  authRequestId: string,
  passkey: unknown,
  headers: Record<string, string> = {},
) => client.post('/oidc/login/passkey', { body: { authRequestId, passkey }, headers });

/** Options, then the authenticator's assertion of them (with `overrides`), posted to the login. */
export async function assertAt(
  client: HttpsClient,
  authRequestId: string,
  authenticator: SoftAuthenticator,
  overrides: Parameters<SoftAuthenticator['assert']>[1] = {},
): Promise<TestResponse> {
  const options = await passkeyOptions(client, authRequestId);
  if (options.status !== 200) throw new Error(`passkey options: ${options.status} ${options.text}`);
  return postPasskey(client, authRequestId, await authenticator.assert(options.body, overrides));
}

/** A password login of `user` on `client` that stops at its second factors. */
export async function passwordStep(
  client: HttpsClient,
  user: TestUser,
): Promise<{ started: StartedAuthorization; response: TestResponse }> {
  const started = await startAuthorization(client, { method: 'password' });
  const response = await submitLogin(client, started, {
    body: { username: user.username, password: user.password },
  });
  return { started, response };
}

/** The audit events the server records from now on. */
export function auditEvents(server: TestServer): AuditEvent[] {
  const events: AuditEvent[] = [];
  server.app.services.audit.subscribe((e) => void events.push(e));
  return events;
}
