import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectError } from '../helpers/expect-error.js';
import type { HttpsClient } from '../helpers/https-client.js';
import { startAuthorization, submitLogin } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import {
  createPolicy,
  createUser,
  enrollTotp,
  postTotp,
  tokensFrom,
  totpQuery,
} from '../second-factors/factor-fixtures.js';
import { managementApi } from '../identities/identity-fixtures.js';
import { MFA_QUERY } from '../mfa/mfa-fixtures.js';
import {
  assertAt,
  auditEvents,
  authenticatorFor,
  localClient,
  PASSKEY_MEMBER,
  passkeyOptions,
  passwordStep,
  postPasskey,
  registerPasskey,
} from './passkey-login-fixtures.js';

describe('a passkey as the second factor (an extension beyond the specification)', () => {
  let server: TestServer;
  let client: HttpsClient;
  beforeAll(async () => {
    server = await startTestServer();
    client = localClient(server);
  });
  afterAll(() => server.close());

  /** A user with verified TOTP and one passkey. */
  async function userWithBoth(name: string) {
    const user = await createUser(server, name);
    const totp = await enrollTotp(server, user);
    const authenticator = await registerPasskey(server, user);
    return { user, totp, authenticator };
  }

  test('the TOTP query carries the passkey member only when the identity has a passkey', async () => {
    const plain = await createUser(server, 'pk2-totp-only');
    await enrollTotp(server, plain);
    const { user } = await userWithBoth('pk2-member');

    const without = await passwordStep(client, plain);
    const withPasskey = await passwordStep(client, user);

    expect(JSON.stringify(without.response.body)).toBe(JSON.stringify({ authQueries: [totpQuery(true)] }));
    expect(withPasskey.response.status).toBe(200);
    expect(withPasskey.response.body).toEqual({
      authQueries: [{ ...totpQuery(true), passkey: PASSKEY_MEMBER }],
    });
    expect(withPasskey.response.header('totp-required')).toBe('true');
  });

  test('options name the identity’s passkeys; the assertion completes the login with amr pwd, pop, mfa', async () => {
    const { user, authenticator } = await userWithBoth('pk2-success');
    const events = auditEvents(server);
    const { started } = await passwordStep(client, user);

    const options = await passkeyOptions(client, started.authRequestId);
    const done = await postPasskey(client, started.authRequestId, await authenticator.assert(options.body));
    const tokens = await tokensFrom(client, started, done);

    expect(options.status).toBe(200);
    expect(options.body.allowCredentials).toEqual([
      expect.objectContaining({
        id: authenticator.credentials[0]!.id.toString('base64url'),
        type: 'public-key',
      }),
    ]);
    expect(done.status).toBe(303);
    expect(payloadOf(tokens.access_token)).toMatchObject({ sub: user.id });
    expect([...payloadOf(tokens.id_token).amr].sort()).toEqual(['mfa', 'pop', 'pwd']);
    expect(events).toContainEqual(
      expect.objectContaining({
        event: 'auth.second-factor',
        method: 'passkey',
        outcome: 'success',
        identityId: user.id,
      }),
    );
  });

  test('a browser gets the TOTP page with the passkey offered, and the passkey form completes the login', async () => {
    const { user, authenticator } = await userWithBoth('pk2-html');
    const plain = await createUser(server, 'pk2-html-plain');
    await enrollTotp(server, plain);
    const html = { accept: 'text/html' };
    const formLogin = async (who: typeof user) => {
      const started = await startAuthorization(client, { method: 'password' });
      const page = await submitLogin(client, started, {
        body: { username: who.username, password: who.password },
        form: true,
        headers: html,
      });
      return { started, page };
    };

    const { started, page } = await formLogin(user);
    const { page: plainPage } = await formLogin(plain);
    const options = await passkeyOptions(client, started.authRequestId);
    const done = await client.post('/oidc/login/passkey', {
      form: {
        authRequestId: started.authRequestId,
        passkey: JSON.stringify(await authenticator.assert(options.body)),
      },
      headers: html,
    });

    expect(page.status).toBe(200);
    expect(page.text).toContain('name="code"');
    expect(page.text).toContain('Use a passkey instead');
    expect(page.header('content-security-policy')).toContain('/oidc/login/passkey.js');
    expect(plainPage.text).not.toContain('data-passkey');
    expect(plainPage.header('content-security-policy')).not.toContain('script-src');
    expect(done.status).toBe(303);
  });

  test('a refused assertion is 401 and counts with the wrong TOTP codes of the identity', async () => {
    const { user, totp, authenticator } = await userWithBoth('pk2-counted');
    const { started } = await passwordStep(client, user);
    const id = started.authRequestId;

    // Three wrong codes and two assertions for another origin: five failures of one budget.
    for (const code of ['000001', '000002', '000003']) {
      expect((await postTotp(client, id, code)).status).toBe(400);
    }
    for (let i = 0; i < 2; i++) {
      const refused = await assertAt(client, id, authenticator, { origin: 'https://evil.example' });
      expectError(refused, { status: 401, code: 'INVALID_AUTH' });
    }
    const right = await assertAt(client, id, authenticator);
    const code = await postTotp(client, id, totp.recoveryCodes[0]!);

    expectError(right, { status: 429, code: 'RATE_LIMITED' });
    expect(Number(right.header('retry-after'))).toBeGreaterThan(0);
    expectError(code, { status: 429, code: 'RATE_LIMITED' });
  });

  test('a challenge is used once, and only by the auth request it was asked for', async () => {
    const { user, authenticator } = await userWithBoth('pk2-binding');
    const first = await passwordStep(client, user);
    const second = await passwordStep(client, user);

    // The options of the first auth request, answered at the second.
    const options = await passkeyOptions(client, first.started.authRequestId);
    const elsewhere = await postPasskey(
      client,
      second.started.authRequestId,
      await authenticator.assert(options.body),
    );
    // A refused answer consumed the challenge: a right one for it is refused too.
    const again = await passkeyOptions(client, first.started.authRequestId);
    const wrongOrigin = await postPasskey(
      client,
      first.started.authRequestId,
      await authenticator.assert(again.body, { origin: 'https://evil.example' }),
    );
    const replay = await postPasskey(
      client,
      first.started.authRequestId,
      await authenticator.assert(again.body),
    );

    expectError(elsewhere, { status: 401, code: 'INVALID_AUTH' });
    expectError(wrongOrigin, { status: 401, code: 'INVALID_AUTH' });
    expectError(replay, { status: 401, code: 'INVALID_AUTH' });
    // Both auth requests still owe their factor.
    expect((await assertAt(client, second.started.authRequestId, authenticator)).status).toBe(303);
  });

  test('another identity’s passkey does not pay the factor', async () => {
    const { user } = await userWithBoth('pk2-victim');
    const other = await userWithBoth('pk2-other');
    const { started } = await passwordStep(client, user);

    const options = await passkeyOptions(client, started.authRequestId);
    // The other identity's authenticator answers with its own credential.
    const foreign = await other.authenticator.assert(
      { ...options.body, allowCredentials: [] },
      { credentialId: other.authenticator.credentials[0]!.id.toString('base64url') },
    );
    const refused = await postPasskey(client, started.authRequestId, foreign);

    expectError(refused, { status: 401, code: 'INVALID_AUTH' });
  });

  test('options are refused to a login that owes nothing a passkey pays, and before any passkey exists', async () => {
    const user = await createUser(server, 'pk2-no-passkey');
    await enrollTotp(server, user);
    const { started } = await passwordStep(client, user);

    expectError(await passkeyOptions(client, started.authRequestId), {
      status: 400,
      code: 'INVALID_AUTH_REQUEST',
    });
    // At an IP address, browsers refuse passkeys: the controller says so.
    expectError(await passkeyOptions(server.client, started.authRequestId), {
      status: 409,
      code: 'PASSKEYS_UNAVAILABLE',
    });
  });

  test('legacy: the MFA query names the passkey, and the assertion completes the session', async () => {
    const { user, authenticator } = await userWithBoth('pk2-legacy');
    const login = await client.post('/edge/client/v1/authenticate?method=password', {
      body: { username: user.username, password: user.password },
    });
    const headers = { 'svc-session': login.body.data.token as string };

    const options = await client.post('/edge/client/v1/authenticate/mfa/passkey/options', { headers });
    const assertion = await authenticator.assert(options.body.data.options);
    const paid = await client.post('/edge/client/v1/authenticate/mfa', {
      headers,
      body: { passkey: assertion },
    });
    const replay = await client.post('/edge/client/v1/authenticate/mfa', {
      headers,
      body: { passkey: assertion },
    });
    const current = await client.get('/edge/client/v1/current-api-session', { headers });

    expect(login.body.data).toMatchObject({
      isMfaRequired: true,
      authQueries: [
        {
          ...MFA_QUERY,
          passkey: {
            httpMethod: 'POST',
            httpUrl: './authenticate/mfa',
            optionsHttpMethod: 'POST',
            optionsHttpUrl: './authenticate/mfa/passkey/options',
          },
        },
      ],
    });
    expect(paid.status).toBe(200);
    expectError(replay, { status: 400, code: 'MFA_INVALID_TOKEN' });
    expect(current.body.data).toMatchObject({ isMfaComplete: true });
    expect([...current.body.data.amr].sort()).toEqual(['mfa', 'pop', 'pwd']);
  });

  test('legacy: an assertion for another session is refused, and options need a passkey', async () => {
    const { user, authenticator } = await userWithBoth('pk2-legacy-bound');
    const open = async () =>
      (
        await client.post('/edge/client/v1/authenticate?method=password', {
          body: { username: user.username, password: user.password },
        })
      ).body.data.token as string;
    const a = { 'svc-session': await open() };
    const b = { 'svc-session': await open() };
    const plain = await createUser(server, 'pk2-legacy-none');
    await enrollTotp(server, plain);
    const plainSession = await client.post('/edge/client/v1/authenticate?method=password', {
      body: { username: plain.username, password: plain.password },
    });

    const options = await client.post('/edge/client/v1/authenticate/mfa/passkey/options', { headers: a });
    const atB = await client.post('/edge/client/v1/authenticate/mfa', {
      headers: b,
      body: { passkey: await authenticator.assert(options.body.data.options) },
    });
    const none = await client.post('/edge/client/v1/authenticate/mfa/passkey/options', {
      headers: { 'svc-session': plainSession.body.data.token },
    });

    expectError(atB, { status: 400, code: 'MFA_INVALID_TOKEN' });
    expectError(none, { status: 404, code: 'NOT_FOUND' });
    expect(plainSession.body.data.authQueries).toEqual([MFA_QUERY]);
    // Session b still owes its step.
    expect(
      (await client.get('/edge/client/v1/current-api-session', { headers: b })).body.data.isMfaComplete,
    ).toBe(false);
  });

  test('a policy requiring TOTP: an identity with a passkey but no app may pay with the passkey, no enrollment', async () => {
    const api = managementApi(server, await server.adminToken());
    const policy = await createPolicy(api, 'pk2-totp-required', { secondary: { requireTotp: true } });
    const user = await createUser(server, 'pk2-no-app', policy);
    const authenticator = await registerPasskey(server, user);
    const { started, response } = await passwordStep(client, user);
    const inBrowser = await startAuthorization(client, { method: 'password' });
    const page = await submitLogin(client, inBrowser, {
      body: { username: user.username, password: user.password },
      form: true,
      headers: { accept: 'text/html' },
    });

    const done = await assertAt(client, started.authRequestId, authenticator);

    expect(response.body).toEqual({ authQueries: [{ ...totpQuery(false), passkey: PASSKEY_MEMBER }] });
    expect(page.text).toContain('Set up an authenticator app');
    expect(page.text).toContain('Use a passkey instead');
    expect(done.status).toBe(303);
    expect(await server.app.knex('mfa_totp').where({ identity_id: user.id })).toEqual([]);
  });

  test('an identity without passkeys keeps the specification’s TOTP step unchanged', async () => {
    const user = await createUser(server, 'pk2-plain-totp');
    await enrollTotp(server, user);
    const authenticator = authenticatorFor(server);
    const { started, response } = await passwordStep(client, user);

    const refused = await postPasskey(client, started.authRequestId, { id: 'x' });

    expect(response.body).toEqual({ authQueries: [totpQuery(true)] });
    expect(authenticator.credentials).toHaveLength(0);
    expectError(refused, { status: 401, code: 'INVALID_AUTH' });
  });
});
