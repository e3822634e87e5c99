import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { PASSKEY_FAILURES_PER_WINDOW } from '../../src/services/auth/passkey-method.js';
import { expectError } from '../helpers/expect-error.js';
import type { HttpsClient } from '../helpers/https-client.js';
import { passwordLogin, startAuthorization } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser } from '../second-factors/factor-fixtures.js';
import { assertAt, auditEvents, localClient, registerPasskey } from './passkey-login-fixtures.js';

describe('refused passwordless sign-ins count per client address, never against an identity', () => {
  let server: TestServer;
  let client: HttpsClient;
  beforeAll(async () => {
    // The passkey failure budget is one of the rate limits, which test servers otherwise turn off.
    server = await startTestServer({ env: { SVC_RATE_LIMITS_ENABLED: 'true' } });
    client = localClient(server);
  });
  afterAll(() => server.close());

  test('past the budget the address gets 429; the identity its credentials named is not locked', async () => {
    const user = await createUser(server, 'pf-target');
    const authenticator = await registerPasskey(server, user);
    const events = auditEvents(server);

    // Assertions naming the identity's credential, for the wrong origin: each is refused.
    const refused = [];
    for (let i = 0; i < PASSKEY_FAILURES_PER_WINDOW; i++) {
      const started = await startAuthorization(client, { method: 'passkey' });
      refused.push(
        (await assertAt(client, started.authRequestId, authenticator, { origin: 'https://evil.example' }))
          .status,
      );
    }
    const started = await startAuthorization(client, { method: 'passkey' });
    const limited = await assertAt(client, started.authRequestId, authenticator);

    expect(refused).toEqual(Array(PASSKEY_FAILURES_PER_WINDOW).fill(401));
    expectError(limited, { status: 429, code: 'RATE_LIMITED' });
    expect(Number(limited.header('retry-after'))).toBeGreaterThan(0);
    // Nothing was counted against the identity: its password signs in, and it is not disabled.
    const failures = await server.app.knex('login_failures').where({ identity_id: user.id });
    expect(failures.filter((f: { consecutive: number }) => f.consecutive > 0)).toEqual([]);
    expect(
      (await passwordLogin(server.client, user.username, user.password)).tokens.access_token,
    ).toBeTruthy();
    const logins = events.filter((e) => e.event === 'auth.login' && e.method === 'passkey');
    expect(logins.filter((e) => e.outcome === 'failure')).toHaveLength(PASSKEY_FAILURES_PER_WINDOW);
    // The failures name no identity: a credential id is no proof of who sent it.
    expect(logins.filter((e) => e.outcome === 'failure' && e.identityId !== undefined)).toEqual([]);
    expect(logins.at(-1)).toMatchObject({ outcome: 'lockout' });
  });
});
