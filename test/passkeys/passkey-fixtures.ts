import type { HttpsClient, TestResponse } from '../helpers/https-client.js';
import { createSoftAuthenticator, type SoftAuthenticator } from '../helpers/soft-authenticator.js';
import type { TestServer } from '../helpers/test-server.js';
import { CLIENT } from '../identities/identity-fixtures.js';

export const PASSKEYS = `${CLIENT}/current-identity/passkeys`;

/**
 * The test server reached by its DNS name (`localhost`, the default rpId), as a browser would:
 * at `127.0.0.1` passkeys are unavailable.
 */
export function namedSite(server: TestServer): { client: HttpsClient; origin: string } {
  const origin = `https://localhost:${new URL(server.url).port}`;
  return { client: server.newClient({}, origin), origin };
}

/** Calls of one identity's session on the named site. */
export function passkeyApi(client: HttpsClient, token: string) {
  const headers = { 'svc-session': token };
  return {
    options: (body: Record<string, unknown> = {}): Promise<TestResponse> =>
      client.post(`${PASSKEYS}/options`, { headers, body }),
    register: (body: Record<string, unknown>): Promise<TestResponse> =>
      client.post(PASSKEYS, { headers, body }),
    list: (): Promise<TestResponse> => client.get(PASSKEYS, { headers }),
    rename: (id: string, name: string, proof: Record<string, unknown> = {}): Promise<TestResponse> =>
      client.patch(`${PASSKEYS}/${id}`, { headers, body: { name, ...proof } }),
    remove: (id: string, proof?: Record<string, unknown>): Promise<TestResponse> =>
      client.delete(`${PASSKEYS}/${id}`, { headers, ...(proof && { body: proof }) }),
  };
}

export type PasskeyApi = ReturnType<typeof passkeyApi>;

/** Options, the soft authenticator's answer, and the registration: the new passkey's id. */
export async function registerPasskey(
  api: PasskeyApi,
  authenticator: SoftAuthenticator,
  name = 'laptop',
): Promise<string> {
  const options = await api.options();
  if (options.status !== 200) throw new Error(`options failed: ${options.status} ${options.text}`);
  const response = await authenticator.register(options.body.data.options);
  const created = await api.register({ name, response });
  if (created.status !== 201) throw new Error(`registration failed: ${created.status} ${created.text}`);
  return created.body.data.id as string;
}

export const softAuthenticatorFor = (origin: string): SoftAuthenticator =>
  createSoftAuthenticator({ origin, rpId: 'localhost' });
