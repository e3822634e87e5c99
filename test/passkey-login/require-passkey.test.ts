import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectError } from '../helpers/expect-error.js';
import type { HttpsClient } from '../helpers/https-client.js';
import { startAuthorization } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { totpCode } from '../helpers/totp.js';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import {
  bearer,
  createIdp,
  createPolicy,
  createUser,
  enrollTotp,
  extJwtHelpers,
  postTotp,
  totpQuery,
  tokensFrom,
  type Idp,
} from '../second-factors/factor-fixtures.js';
import {
  assertAt,
  authenticatorFor,
  localClient,
  passkeyOptions,
  passwordStep,
  postPasskey,
  registerPasskey,
} from './passkey-login-fixtures.js';

const REGISTER = '/oidc/login/passkey/register';

/** The MFA query of a policy that requires a passkey. */
const requiredQuery = (isPasskeyRegistered: boolean) => {
  const at = { httpMethod: 'POST', httpUrl: isPasskeyRegistered ? '/oidc/login/passkey' : REGISTER };
  return { typeId: 'MFA', provider: 'svc', ...at, passkey: at, isPasskeyRegistered };
};

describe('a policy that requires a passkey (secondary.requirePasskey; an extension beyond the specification)', () => {
  let server: TestServer;
  let client: HttpsClient;
  let api: ManagementApi;
  let idp: Idp;
  let passkeyPolicy: string;
  let withJwtPolicy: string;
  let noPasswordlessPolicy: string;
  beforeAll(async () => {
    server = await startTestServer();
    client = localClient(server);
    api = managementApi(server, await server.adminToken());
    idp = await createIdp(api, 'pk-require');
    passkeyPolicy = await createPolicy(api, 'passkey-required', { secondary: { requirePasskey: true } });
    withJwtPolicy = await createPolicy(api, 'passkey-and-jwt', {
      secondary: { requirePasskey: true, requireExtJwt: idp.id },
    });
    noPasswordlessPolicy = await createPolicy(api, 'no-passwordless', {
      primary: { passkey: { allowed: false } },
    });
  });
  afterAll(() => server.close());

  const registrationOptions = (id: string, headers = {}) =>
    client.get(`${REGISTER}?authRequestID=${encodeURIComponent(id)}`, { headers });
  const finishRegistration = (id: string, passkey: unknown, headers = {}) =>
    client.post(REGISTER, { body: { authRequestId: id, passkey, name: 'phone' }, headers });

  test('without a passkey: the login owes its registration, done mid-flow; amr pwd, pop, mfa', async () => {
    const user = await createUser(server, 'rp-register', passkeyPolicy);
    const authenticator = authenticatorFor(server);
    const { started, response } = await passwordStep(client, user);

    const options = await registrationOptions(started.authRequestId);
    const created = await finishRegistration(
      started.authRequestId,
      await authenticator.register(options.body),
    );
    const tokens = await tokensFrom(client, started, created);
    const listed = await server.app.services.passkeys.list(user.id);

    expect(response.status).toBe(200);
    expect(response.body).toEqual({ authQueries: [requiredQuery(false)] });
    // No code pays this factor: the header of the TOTP step is not sent.
    expect(response.header('totp-required')).toBeUndefined();
    expect(options.body).toMatchObject({ rp: { id: 'localhost' }, user: { name: 'rp-register' } });
    // The documented creation options of the client API, not the library's raw object (`hints`).
    expect(Object.keys(options.body).sort()).toEqual([
      'attestation',
      'authenticatorSelection',
      'challenge',
      'excludeCredentials',
      'extensions',
      'pubKeyCredParams',
      'rp',
      'timeout',
      'user',
    ]);
    expect(created.status).toBe(303);
    expect([...payloadOf(tokens.id_token).amr].sort()).toEqual(['mfa', 'pop', 'pwd']);
    expect(listed.map((p) => p.name)).toEqual(['phone']);
  });

  test('with a passkey registered, the password alone cannot register another one (options or finish)', async () => {
    const user = await createUser(server, 'rp-has-one', passkeyPolicy);
    const attacker = authenticatorFor(server);
    // A registration begun while the identity had none, finished after its first passkey exists.
    const { started: before } = await passwordStep(client, user);
    const pending = await registrationOptions(before.authRequestId);
    await registerPasskey(server, user);
    const { started, response } = await passwordStep(client, user);

    const options = await registrationOptions(started.authRequestId);
    const late = await finishRegistration(before.authRequestId, await attacker.register(pending.body));

    expect(response.body).toEqual({ authQueries: [requiredQuery(true)] });
    expectError(options, { status: 400, code: 'INVALID_AUTH_REQUEST' });
    expectError(late, { status: 400, code: 'INVALID_AUTH_REQUEST' });
    expect(await server.app.services.passkeys.count(user.id)).toBe(1);
  });

  test('two parallel mid-flow registrations: only the first passkey is added', async () => {
    const user = await createUser(server, 'rp-parallel', passkeyPolicy);
    const logins = await Promise.all([passwordStep(client, user), passwordStep(client, user)]);
    const made = await Promise.all(
      logins.map(async ({ started }) => {
        const options = await registrationOptions(started.authRequestId);
        return { id: started.authRequestId, passkey: await authenticatorFor(server).register(options.body) };
      }),
    );

    const finished = await Promise.all(made.map((m) => finishRegistration(m.id, m.passkey)));

    expect(finished.map((r) => r.status).sort()).toEqual([303, 400]);
    expect(await server.app.services.passkeys.count(user.id)).toBe(1);
  });

  test('registration is refused while another factor is owed, and allowed once it is paid', async () => {
    const { userOf, jwtOf } = extJwtHelpers(() => ({ server, api, idp, policy: withJwtPolicy }));
    const user = await userOf('rp-jwt-first');
    const authenticator = authenticatorFor(server);
    const { started, response } = await passwordStep(client, user);

    const early = await registrationOptions(started.authRequestId);
    const jwt = bearer(await jwtOf(user));
    const options = await registrationOptions(started.authRequestId, jwt);
    const created = await finishRegistration(
      started.authRequestId,
      await authenticator.register(options.body),
    );

    expect(response.body.authQueries.map((q: { typeId: string }) => q.typeId)).toEqual(['EXT-JWT', 'MFA']);
    const refused = expectError(early, { status: 400, code: 'INVALID_AUTH_REQUEST' });
    expect(refused.message).toContain(`EXT-JWT (signer ${idp.id})`);
    expect(await server.app.services.passkeys.count(user.id)).toBe(1);
    // The JWT sent with the options counted for the auth request: the registration completes it.
    expect(created.status).toBe(303);
  });

  test('with verified TOTP and no passkey: its code is owed before the registration and does not pay it', async () => {
    const user = await createUser(server, 'rp-totp-first', passkeyPolicy);
    const totp = await enrollTotp(server, user);
    const authenticator = authenticatorFor(server);
    const { started, response } = await passwordStep(client, user);

    const early = await registrationOptions(started.authRequestId);
    const code = await postTotp(client, started.authRequestId, await totpCode(totp.url, totp.step + 1));
    const options = await registrationOptions(started.authRequestId);
    const created = await finishRegistration(
      started.authRequestId,
      await authenticator.register(options.body),
    );
    const tokens = await tokensFrom(client, started, created);

    expect(response.body).toEqual({ authQueries: [totpQuery(true), requiredQuery(false)] });
    const refused = expectError(early, { status: 400, code: 'INVALID_AUTH_REQUEST' });
    expect(refused.message).toContain('satisfy the other owed factors');
    expect(code.status).toBe(200);
    expect(code.body).toEqual({ authQueries: [requiredQuery(false)] });
    expect(created.status).toBe(303);
    expect([...payloadOf(tokens.id_token).amr].sort()).toEqual(['mfa', 'otp', 'pop', 'pwd']);
  });

  test('a TOTP code does not pay it; a registered passkey does', async () => {
    const user = await createUser(server, 'rp-has-both', passkeyPolicy);
    const totp = await enrollTotp(server, user);
    const authenticator = await registerPasskey(server, user);
    const { started, response } = await passwordStep(client, user);

    const code = await postTotp(client, started.authRequestId, await totpCode(totp.url, totp.step + 1));
    const done = await assertAt(client, started.authRequestId, authenticator);

    expect(response.body).toEqual({ authQueries: [requiredQuery(true)] });
    expect(code.status).toBe(200);
    expect(code.body).toEqual({ authQueries: [requiredQuery(true)] });
    expect(done.status).toBe(303);
  });

  test('a passwordless sign-in satisfies it at once; a required external JWT is still owed', async () => {
    const plain = await createUser(server, 'rp-passwordless', passkeyPolicy);
    const withJwt = await createUser(server, 'rp-passwordless-jwt', withJwtPolicy);
    const a = await registerPasskey(server, plain);
    const b = await registerPasskey(server, withJwt);

    const first = await startAuthorization(client, { method: 'passkey' });
    const second = await startAuthorization(client, { method: 'passkey' });
    const done = await assertAt(client, first.authRequestId, a);
    const owes = await assertAt(client, second.authRequestId, b);

    expect(done.status).toBe(303);
    expect(owes.status).toBe(200);
    expect(owes.body.authQueries.map((q: { typeId: string }) => q.typeId)).toEqual(['EXT-JWT']);
  });

  test('primary.passkey.allowed false refuses a passwordless sign-in, not the passkey as second factor', async () => {
    const user = await createUser(server, 'rp-not-allowed', noPasswordlessPolicy);
    await enrollTotp(server, user);
    const authenticator = await registerPasskey(server, user);

    const started = await startAuthorization(client, { method: 'passkey' });
    const refused = await assertAt(client, started.authRequestId, authenticator);
    const { started: second } = await passwordStep(client, user);
    const paid = await assertAt(client, second.authRequestId, authenticator);

    expectError(refused, { status: 401, code: 'INVALID_AUTH' });
    expect(paid.status).toBe(303);
  });

  test('legacy: the session owes the passkey; a TOTP code is refused, the passkey completes it', async () => {
    const user = await createUser(server, 'rp-legacy', passkeyPolicy);
    const totp = await enrollTotp(server, user);
    const authenticator = await registerPasskey(server, user);
    const login = await client.post('/edge/client/v1/authenticate?method=password', {
      body: { username: user.username, password: user.password },
    });
    const headers = { 'svc-session': login.body.data.token as string };

    const code = await client.post('/edge/client/v1/authenticate/mfa', {
      headers,
      body: { code: await totpCode(totp.url, totp.step + 1) },
    });
    const options = await client.post('/edge/client/v1/authenticate/mfa/passkey/options', { headers });
    const paid = await client.post('/edge/client/v1/authenticate/mfa', {
      headers,
      body: { passkey: await authenticator.assert(options.body.data.options) },
    });

    expect(login.body.data).toMatchObject({
      isMfaRequired: true,
      authQueries: [{ typeId: 'MFA', httpUrl: './authenticate/mfa', isPasskeyRegistered: true }],
    });
    expectError(code, { status: 400, code: 'MFA_INVALID_TOKEN' });
    expect(paid.status).toBe(200);
  });

  test('options of a passkey at /oidc/login/passkey are refused while the passkey is to be registered', async () => {
    const user = await createUser(server, 'rp-no-assert', passkeyPolicy);
    const { started } = await passwordStep(client, user);

    expectError(await passkeyOptions(client, started.authRequestId), {
      status: 400,
      code: 'INVALID_AUTH_REQUEST',
    });
    expectError(await postPasskey(client, started.authRequestId, { id: 'none' }), {
      status: 401,
      code: 'INVALID_AUTH',
    });
  });
});
