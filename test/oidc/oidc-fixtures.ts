import * as oc from 'openid-client';
import { Agent, fetch as undiciFetch } from 'undici';
import { createSecretBox } from '../../src/crypto/secret-box.js';
import type { TestServer } from '../helpers/test-server.js';

/** The master key test-server.ts starts every controller with. */
const TEST_MASTER_KEY = 'c3ZjLXRlc3QtbWFzdGVyLWtleS0zMi1ieXRlcy0hISE=';

/** A fetch for openid-client that trusts the controller's CA (and may present a client certificate). */
export function trustingFetch(server: TestServer, tls: { cert?: string; key?: string } = {}) {
  const agent = new Agent({ connect: { ca: server.ca, ...tls } });
  const customFetch: oc.CustomFetch = (url, options) =>
    undiciFetch(url, { ...(options as object), dispatcher: agent }) as unknown as Promise<Response>;
  return { customFetch, close: () => agent.close() };
}

/** openid-client configured by discovery of `issuer`, as a real relying party would be. */
export async function discoverClient(
  server: TestServer,
  issuer: string,
  tls: { cert?: string; key?: string } = {},
) {
  const { customFetch, close } = trustingFetch(server, tls);
  const config = await oc.discovery(new URL(issuer), 'svc', undefined, oc.None(), {
    [oc.customFetch]: customFetch,
  });
  return { config, close };
}

export const issuerOf = (server: TestServer, host = '127.0.0.1') =>
  `https://${host}:${new URL(server.url).port}/oidc`;

/** The private JWK the controller signs with now, opened with the test master key (to mint edge cases). */
export async function currentSigningJwk(server: TestServer): Promise<Record<string, unknown>> {
  const box = createSecretBox(Buffer.from(TEST_MASTER_KEY, 'base64'));
  const rows = await server.app
    .knex('signing_keys')
    .where('signs_from', '<=', new Date())
    .orderBy('signs_from', 'desc');
  const row = rows.find((r: { retired_at: Date | null }) => !r.retired_at || r.retired_at > new Date());
  return JSON.parse(box.open(row.private_jwk_enc));
}

/** Payload of a JWT without verifying it (assertions only; verification is asserted separately). */
export function payloadOf(jwt: string): Record<string, any> {
  return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));
}
