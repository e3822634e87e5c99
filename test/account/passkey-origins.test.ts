import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectError } from '../helpers/expect-error.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { localClient } from '../passkey-login/passkey-login-fixtures.js';

describe('passkeys where the Host is not one of webauthn.origins', () => {
  let server: TestServer;
  beforeAll(async () => {
    // A proxy serves the pages at login.localhost: every ceremony at the bind point would fail.
    server = await startTestServer({ env: { SVC_WEBAUTHN_ORIGINS: 'https://login.localhost' } });
  });
  afterAll(() => server.close());

  test('the passwordless options answer 409 naming webauthn.origins, not a ceremony bound to fail', async () => {
    const res = await localClient(server).post('/edge/client/v1/authenticate/passkey/options');

    const error = expectError(res, { status: 409, code: 'PASSKEYS_UNAVAILABLE' });
    expect(error.message).toContain('is not one of the passkey origins (https://login.localhost)');
    expect(error.message).toContain('webauthn.origins');
  });
});
