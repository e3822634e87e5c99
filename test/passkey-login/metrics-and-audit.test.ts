import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { HttpsClient } from '../helpers/https-client.js';
import { startAuthorization } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { enrolledUpdbUser, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import { tokensFrom } from '../second-factors/factor-fixtures.js';
import {
  namedSite,
  passkeyApi,
  registerPasskey,
  softAuthenticatorFor,
} from '../passkeys/passkey-fixtures.js';
import { assertAt, auditEvents } from './passkey-login-fixtures.js';

describe('passkey registrations and passwordless logins in the metrics and the audit events', () => {
  let server: TestServer;
  let admin: ManagementApi;
  let site: { client: HttpsClient; origin: string };
  beforeAll(async () => {
    server = await startTestServer();
    admin = managementApi(server, await server.adminToken());
    site = namedSite(server);
  });
  afterAll(() => server.close());

  /** The value of one series of the scrape an operator's Prometheus reads (0 before its first count). */
  async function series(name: string): Promise<number> {
    const scrape = await server.client.get('/metrics');
    expect(scrape.status).toBe(200);
    const line = scrape.text.split('\n').find((l) => l.startsWith(`${name} `));
    return Number(line?.split(' ')[1] ?? 0);
  }
  const REGISTERED = 'svc_passkey_registrations_total{outcome="success"}';
  const REFUSED = 'svc_passkey_registrations_total{outcome="failure"}';
  const SIGNED_IN = 'svc_passkey_assertions_total{purpose="passwordless",outcome="success"}';
  const NOT_SIGNED_IN = 'svc_passkey_assertions_total{purpose="passwordless",outcome="failure"}';

  test('a registration over the Edge API, then a passwordless login, each counted and audited', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-metrics-audit');
    const api = passkeyApi(site.client, user.token);
    const authenticator = softAuthenticatorFor(site.origin);
    const events = auditEvents(server);
    const before = {
      registered: await series(REGISTERED),
      refused: await series(REFUSED),
      signedIn: await series(SIGNED_IN),
      notSignedIn: await series(NOT_SIGNED_IN),
    };

    // A registration whose clientDataJSON names another origin is refused, and counted as such.
    const options = await api.options();
    // (Another authenticator: this one keeps even the credential the controller refused.)
    const forged = await softAuthenticatorFor(site.origin).register(options.body.data.options, {
      origin: 'https://evil.example',
    });
    expect((await api.register({ name: 'forged', response: forged })).status).toBe(400);
    const passkeyId = await registerPasskey(api, authenticator, 'phone');

    expect(await series(REGISTERED)).toBe(before.registered + 1);
    expect(await series(REFUSED)).toBe(before.refused + 1);
    expect(events).toContainEqual(
      expect.objectContaining({ event: 'passkey.registered', identityId: user.id, passkeyId }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({ event: 'passkey.registration-failed', identityId: user.id }),
    );

    // A passwordless login with a signature over another challenge fails; the real one succeeds.
    const failed = await startAuthorization(site.client, { method: 'passkey' });
    const refused = await assertAt(site.client, failed.authRequestId, authenticator, {
      challenge: Buffer.from('not the challenge').toString('base64url'),
    });
    expect(refused.status).toBe(401);
    const started = await startAuthorization(site.client, { method: 'passkey' });
    const done = await assertAt(site.client, started.authRequestId, authenticator);
    const tokens = await tokensFrom(site.client, started, done);

    expect(payloadOf(tokens.id_token).sub).toBe(user.id);
    expect(await series(SIGNED_IN)).toBe(before.signedIn + 1);
    expect(await series(NOT_SIGNED_IN)).toBe(before.notSignedIn + 1);
    const logins = events.filter((e) => e.event === 'auth.login' && e.method === 'passkey');
    expect(logins).toEqual([
      expect.objectContaining({ outcome: 'failure' }),
      expect.objectContaining({ outcome: 'success', identityId: user.id }),
    ]);
  });
});
