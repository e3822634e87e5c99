import { afterAll, afterEach, beforeAll, describe, expect, jest, test } from '@jest/globals';
import type { HttpsClient } from '../helpers/https-client.js';
import { expectError } from '../helpers/expect-error.js';
import { useMovableClock } from '../helpers/movable-clock.js';
import { passwordLogin as oidcPasswordLogin } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import {
  CLIENT,
  enrolledUpdbUser,
  managementApi,
  passwordLogin,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import {
  namedSite,
  PASSKEYS,
  passkeyApi,
  registerPasskey,
  softAuthenticatorFor,
} from './passkey-fixtures.js';

describe('registering passkeys (an extension beyond the specification)', () => {
  let server: TestServer;
  let admin: ManagementApi;
  let site: { client: HttpsClient; origin: string };

  beforeAll(async () => {
    server = await startTestServer();
    admin = managementApi(server, await server.adminToken());
    site = namedSite(server);
  });
  afterEach(() => void jest.useRealTimers());
  afterAll(() => server.close());

  test('the creation options: no attestation, resident key and user verification preferred, a random stable user handle', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-options');
    const api = passkeyApi(site.client, user.token);

    const first = await api.options();
    const second = await api.options();

    expect(first.status).toBe(200);
    const { options, warnings } = first.body.data;
    expect(options).toMatchObject({
      rp: { id: 'localhost' },
      user: { name: 'pk-options' },
      attestation: 'none',
      authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
      excludeCredentials: [],
    });
    expect(options.pubKeyCredParams.map((p: { alg: number }) => p.alg)).toContain(-7);
    expect(warnings).toEqual([]);
    const handle = Buffer.from(options.user.id, 'base64url');
    expect(handle.length).toBe(32);
    expect(handle.toString('utf8')).not.toContain(user.id);
    expect(handle.toString('utf8')).not.toContain('pk-options');
    expect(second.body.data.options.user.id).toBe(options.user.id);
    expect(second.body.data.options.challenge).not.toBe(options.challenge);
  });

  test('a registered passkey is listed, excluded from the next options, renamed and removed', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-lifecycle');
    const api = passkeyApi(site.client, user.token);
    const authenticator = softAuthenticatorFor(site.origin);

    const options = (await api.options()).body.data.options;
    const response = await authenticator.register(options);
    const created = await api.register({ name: 'laptop', response });
    const listed = await api.list();
    const next = (await api.options()).body.data.options;
    const renamed = await api.rename(created.body.data.id, 'work laptop');
    const removed = await api.remove(created.body.data.id);
    const after = await api.list();

    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      id: expect.any(String),
      name: 'laptop',
      createdAt: expect.any(String),
    });
    expect(listed.body.data).toEqual([
      {
        id: created.body.data.id,
        name: 'laptop',
        createdAt: created.body.data.createdAt,
        lastUsedAt: null,
        backedUp: false,
      },
    ]);
    expect(next.excludeCredentials).toEqual([
      { id: response.id, type: 'public-key', transports: ['internal'] },
    ]);
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.name).toBe('work laptop');
    expect(removed.status).toBe(200);
    expect(after.body.data).toEqual([]);
  });

  test('the same credential cannot be registered twice', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-twice');
    const api = passkeyApi(site.client, user.token);
    const authenticator = softAuthenticatorFor(site.origin);
    await registerPasskey(api, authenticator);

    // A second ceremony answered with the credential already stored (a browser honouring
    // excludeCredentials would not even offer it).
    const options = (await api.options()).body.data.options;
    const credentialId = authenticator.credentials[0]!.id.toString('base64url');
    const again = await authenticator.register(options, { credentialId });
    const res = await api.register({ name: 'again', response: again });

    expectError(res, { status: 409, code: 'CONFLICT' });
    expect((await api.list()).body.data).toHaveLength(1);
  });

  test("another identity's credential id is the generic 400, not a 409 that says it is registered", async () => {
    const owner = await enrolledUpdbUser(server, admin, 'pk-cred-owner');
    const prober = await enrolledUpdbUser(server, admin, 'pk-cred-prober');
    const ownerAuthenticator = softAuthenticatorFor(site.origin);
    await registerPasskey(passkeyApi(site.client, owner.token), ownerAuthenticator);
    const api = passkeyApi(site.client, prober.token);
    const credentialId = ownerAuthenticator.credentials[0]!.id.toString('base64url');

    // A prober names a credential id it saw (ids are public): answered here with the owner's
    // authenticator, which is what produces that id in a test.
    const probe = await ownerAuthenticator.register((await api.options()).body.data.options, {
      credentialId,
    });
    const res = await api.register({ name: 'probe', response: probe });

    const error = expectError(res, { status: 400, code: 'PASSKEY_REGISTRATION_FAILED' });
    expect(JSON.stringify(error)).not.toContain('already registered');
    expect((await api.list()).body.data).toEqual([]);
  });

  test("another identity's passkey is 404 to rename and remove", async () => {
    const owner = await enrolledUpdbUser(server, admin, 'pk-owner');
    const other = await enrolledUpdbUser(server, admin, 'pk-other');
    const id = await registerPasskey(passkeyApi(site.client, owner.token), softAuthenticatorFor(site.origin));
    const api = passkeyApi(site.client, other.token);

    expectError(await api.rename(id, 'mine now'), { status: 404, code: 'NOT_FOUND' });
    expectError(await api.remove(id), { status: 404, code: 'NOT_FOUND' });
    expect((await passkeyApi(site.client, owner.token).list()).body.data).toMatchObject([
      { id, name: 'laptop' },
    ]);
  });

  test('a challenge is answered once, by the session that asked, within 5 minutes', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-challenge');
    const api = passkeyApi(site.client, user.token);
    const otherSession = (await passwordLogin(server, user.username, user.password)).body.data
      .token as string;
    const authenticator = softAuthenticatorFor(site.origin);

    const response = await authenticator.register((await api.options()).body.data.options);
    const elsewhere = await passkeyApi(site.client, otherSession).register({ name: 'x', response });
    const first = await api.register({ name: 'x', response });
    const replay = await api.register({ name: 'y', response });

    useMovableClock();
    const late = await authenticator.register(
      (await api.options({ password: user.password })).body.data.options,
    );
    jest.setSystemTime(Date.now() + 5 * 60_000 + 1000);
    const expired = await api.register({ name: 'late', response: late, password: user.password });

    expectError(elsewhere, { status: 400, code: 'PASSKEY_REGISTRATION_FAILED' });
    expect(first.status).toBe(201);
    expectError(replay, { status: 400, code: 'PASSKEY_REGISTRATION_FAILED' });
    expectError(expired, { status: 400, code: 'PASSKEY_REGISTRATION_FAILED' });
  });

  test('a response for another origin or rpId is refused', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-origin');
    const api = passkeyApi(site.client, user.token);
    const authenticator = softAuthenticatorFor(site.origin);

    const origin = await api.register({
      name: 'x',
      response: await authenticator.register((await api.options()).body.data.options, {
        origin: 'https://evil.example',
      }),
    });
    const rpId = await api.register({
      name: 'x',
      response: await authenticator.register((await api.options()).body.data.options, {
        rpId: 'evil.example',
      }),
    });

    expectError(origin, { status: 400, code: 'PASSKEY_REGISTRATION_FAILED' });
    expectError(rpId, { status: 400, code: 'PASSKEY_REGISTRATION_FAILED' });
    expect((await api.list()).body.data).toEqual([]);
  });

  test('an old sign-in must prove the password or a TOTP code again; a wrong one is refused', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-recent');
    const api = passkeyApi(site.client, user.token);
    const authenticator = softAuthenticatorFor(site.origin);
    useMovableClock();
    jest.setSystemTime(Date.now() + 6 * 60_000);

    const refused = await api.options();
    const wrong = await api.options({ password: 'not-the-password' });
    const withPassword = await api.options({ password: user.password });
    const response = await authenticator.register(withPassword.body.data.options);
    const finishRefused = await api.register({ name: 'x', response });

    expectError(refused, { status: 403, code: 'REAUTHENTICATION_REQUIRED' });
    expectError(wrong, { status: 401, code: 'INVALID_AUTH' });
    expect(withPassword.status).toBe(200);
    // The refused finish did not consume the challenge: it is taken only once every check passed.
    expectError(finishRefused, { status: 403, code: 'REAUTHENTICATION_REQUIRED' });
    const finished = await api.register({ name: 'x', response, password: user.password });
    expect(finished.status).toBe(201);
  });

  test('renaming or removing a passkey after an old sign-in also needs the password (or a code) again', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-recent-change');
    const api = passkeyApi(site.client, user.token);
    const authenticator = softAuthenticatorFor(site.origin);
    const created = await api.register({
      name: 'phone',
      response: await authenticator.register((await api.options()).body.data.options),
    });
    const id = created.body.data.id as string;
    useMovableClock();
    jest.setSystemTime(Date.now() + 6 * 60_000);

    const rename = await api.rename(id, 'stolen');
    const remove = await api.remove(id);
    const kept = (await api.list()).body.data;
    const renamed = await api.rename(id, 'work phone', { password: user.password });
    const removed = await api.remove(id, { password: user.password });

    expectError(rename, { status: 403, code: 'REAUTHENTICATION_REQUIRED' });
    expectError(remove, { status: 403, code: 'REAUTHENTICATION_REQUIRED' });
    expect(kept.map((p: { name: string }) => p.name)).toEqual(['phone']);
    expect(renamed.body.data.name).toBe('work phone');
    expect(removed.status).toBe(200);
    expect((await api.list()).body.data).toEqual([]);
  });

  test("a bearer token's auth_time counts as the sign-in: fresh it registers, old it needs the password", async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-bearer');
    const { tokens } = await oidcPasswordLogin(server.client, user.username, user.password);
    const headers = { authorization: `Bearer ${tokens.access_token}` };
    const authenticator = softAuthenticatorFor(site.origin);

    const options = await site.client.post(`${PASSKEYS}/options`, { headers, body: {} });
    const response = await authenticator.register(options.body.data.options);
    const created = await site.client.post(PASSKEYS, { headers, body: { name: 'oidc', response } });
    useMovableClock();
    jest.setSystemTime(Date.now() + 6 * 60_000);
    const old = await site.client.post(`${PASSKEYS}/options`, { headers, body: {} });
    const again = await site.client.post(`${PASSKEYS}/options`, {
      headers,
      body: { password: user.password },
    });

    expect(options.status).toBe(200);
    expect(created.status).toBe(201);
    expectError(old, { status: 403, code: 'REAUTHENTICATION_REQUIRED' });
    expect(again.status).toBe(200);
  });

  test('a TOTP code re-entered also counts; a session whose TOTP step is owed is refused', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-totp');
    const headers = { 'svc-session': user.token };
    const started = await server.client.post(`${CLIENT}/current-identity/mfa`, { headers });
    const url = started.body.data.provisioningUrl as string;
    await server.client.post(`${CLIENT}/current-identity/mfa/verify`, {
      headers,
      body: { code: await totpCode(url, timeStepAt()) },
    });
    const pending = (await passwordLogin(server, user.username, user.password)).body.data.token as string;

    const owed = await passkeyApi(site.client, pending).options();

    useMovableClock();
    jest.setSystemTime(Date.now() + 6 * 60_000);
    const withCode = await passkeyApi(site.client, user.token).options({
      code: await totpCode(url, timeStepAt()),
    });

    expectError(owed, { status: 401, code: 'UNAUTHORIZED' });
    expect(withCode.status).toBe(200);
  });

  test('garbage is a 4xx, never a 5xx', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-garbage');
    const api = passkeyApi(site.client, user.token);
    const good = (await softAuthenticatorFor(site.origin).register(
      (await api.options()).body.data.options,
    )) as Record<string, any>;
    const bodies: unknown[] = [
      {},
      { name: '' },
      { name: 'x' },
      { name: 'x', response: null },
      { name: 'x', response: 'text' },
      { name: 'x', response: { ...good, id: 5 } },
      { name: 'x', response: { ...good, response: { ...good.response, clientDataJSON: '%%%' } } },
      { name: 'x', response: { ...good, response: { ...good.response, attestationObject: 'AAAA' } } },
      {
        name: 'x',
        response: { ...good, response: { ...good.response, clientDataJSON: 'A'.repeat(10_000) } },
      },
      { name: 'x'.repeat(100), response: good },
      { name: 'x', response: good, extra: true },
      '[1,2,3]',
    ];

    const statuses = [];
    for (const body of bodies) statuses.push((await api.register(body as Record<string, unknown>)).status);

    expect(statuses.filter((s) => s < 400 || s >= 500)).toEqual([]);
  });

  test('passkeys are unavailable at an IP address (409 naming the setting)', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-ip');

    const res = await server.client.post(`${PASSKEYS}/options`, { headers: { 'svc-session': user.token } });

    const error = expectError(res, { status: 409, code: 'PASSKEYS_UNAVAILABLE' });
    expect(error.message).toContain('webauthn.rpId');
  });

  test('passkeys of another rpId make the options warn', async () => {
    const user = await enrolledUpdbUser(server, admin, 'pk-warning');
    const api = passkeyApi(site.client, user.token);
    const id = await registerPasskey(api, softAuthenticatorFor(site.origin));
    // As if webauthn.rpId had been changed since: the stored passkey belongs to the old name.
    await server.app.knex('passkeys').where({ id }).update({ rp_id: 'old.example' });

    const { warnings } = (await api.options()).body.data;

    expect(warnings).toEqual([expect.stringContaining('old.example')]);
  });
});
