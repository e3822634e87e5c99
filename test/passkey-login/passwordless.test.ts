import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oc from 'openid-client';
import { expectError } from '../helpers/expect-error.js';
import type { HttpsClient } from '../helpers/https-client.js';
import { startAuthorization } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { discoverClient, issuerOf, payloadOf } from '../oidc/oidc-fixtures.js';
import { createUser, enrollTotp, tokensFrom } from '../second-factors/factor-fixtures.js';
import {
  auditEvents,
  localClient,
  localUrl,
  passkeyOptions,
  postPasskey,
  registerPasskey,
} from './passkey-login-fixtures.js';

describe('passwordless sign-in with a passkey (an extension beyond the specification)', () => {
  let server: TestServer;
  let client: HttpsClient;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    client = localClient(server);
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  test('discovery names the passkey endpoints; the method=passkey hint leads to them', async () => {
    const discovery = await client.get('/.well-known/openid-configuration');
    const started = await startAuthorization(client, { method: 'passkey' });
    const issuer = issuerOf(server, 'localhost');

    expect(discovery.body.svc_login_endpoints).toMatchObject({
      passkey: `${issuer}/login/passkey`,
      passkey_register: `${issuer}/login/passkey/register`,
    });
    expect(started.loginLocation).toBe(`/oidc/login/passkey?authRequestID=${started.authRequestId}`);
  });

  test('JSON: discoverable options, the assertion is the primary step; amr pop and mfa, no TOTP owed', async () => {
    const user = await createUser(server, 'pl-json');
    await enrollTotp(server, user);
    const authenticator = await registerPasskey(server, user);
    const events = auditEvents(server);
    const started = await startAuthorization(client, { method: 'passkey' });

    const options = await passkeyOptions(client, started.authRequestId);
    const done = await postPasskey(client, started.authRequestId, await authenticator.assert(options.body));
    const tokens = await tokensFrom(client, started, done);

    expect(options.body).toMatchObject({
      rpId: 'localhost',
      userVerification: 'required',
      allowCredentials: [],
    });
    expect(done.status).toBe(303);
    const claims = payloadOf(tokens.id_token);
    expect(claims.sub).toBe(user.id);
    expect([...claims.amr].sort()).toEqual(['mfa', 'pop']);
    expect(events).toContainEqual(
      expect.objectContaining({
        event: 'auth.login',
        method: 'passkey',
        outcome: 'success',
        identityId: user.id,
      }),
    );
  });

  test('openid-client: authorization URL with the hint, the passkey, the code grant', async () => {
    const user = await createUser(server, 'pl-openid-client');
    const authenticator = await registerPasskey(server, user);
    const { config, close } = await discoverClient(server, issuerOf(server, 'localhost'));
    try {
      const verifier = oc.randomPKCECodeVerifier();
      const url = oc.buildAuthorizationUrl(config, {
        redirect_uri: 'http://localhost:8123/auth/callback',
        scope: 'openid',
        code_challenge: await oc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        method: 'passkey',
        state: 'st',
      });
      const start = await client.get(url.pathname + url.search);
      const login = new URL(start.header('location')!, localUrl(server));
      const id = login.searchParams.get('authRequestID')!;
      const options = await client.get(login.pathname + login.search);
      const done = await postPasskey(client, id, await authenticator.assert(options.body));
      const tokens = await oc.authorizationCodeGrant(config, new URL(done.header('location')!), {
        pkceCodeVerifier: verifier,
        expectedState: 'st',
      });

      expect(tokens.claims()!.sub).toBe(user.id);
      expect([...(tokens.claims()!.amr as string[])].sort()).toEqual(['mfa', 'pop']);
    } finally {
      await close();
    }
  });

  test('the HTML page offers the passkey through the one script its CSP allows, and only where it can work', async () => {
    const started = await startAuthorization(client, { method: 'password' });
    const html = { accept: 'text/html' };

    const page = await client.get(started.loginLocation, { headers: html });
    const atAddress = await server.client.get(started.loginLocation, { headers: html });
    const script = await client.get('/oidc/login/passkey.js');

    const csp = page.header('content-security-policy')!;
    expect(csp).toContain(`script-src ${new URL(localUrl(server)).origin}/oidc/login/passkey.js`);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(page.text).toContain('<script src="/oidc/login/passkey.js" defer></script>');
    expect(page.text).toMatch(
      /<form method="post" action="\/oidc\/login\/passkey" data-passkey="get"[^>]* hidden>/,
    );
    expect(page.text).toContain('Sign in with a passkey');
    // The password form works without the script.
    expect(page.text).toContain('name="password"');
    // At an IP address a browser refuses passkeys: no offer, no script.
    expect(atAddress.text).not.toContain('data-passkey');
    expect(atAddress.text).not.toContain('<script');
    expect(atAddress.header('content-security-policy')).not.toContain('script-src');
    expect(script.status).toBe(200);
    expect(script.header('content-type')).toMatch(/^text\/javascript/);
    expect(script.text).toContain('navigator.credentials.get');
  });

  test('HTML: the form post the script makes (the assertion as JSON text) signs in with a 303', async () => {
    const user = await createUser(server, 'pl-form');
    const authenticator = await registerPasskey(server, user);
    const started = await startAuthorization(client, { method: 'passkey' });

    const options = await passkeyOptions(client, started.authRequestId);
    const assertion = await authenticator.assert(options.body);
    const wrong = await client.post('/oidc/login/passkey', {
      form: { authRequestId: started.authRequestId, passkey: '{"id":"nothing"}' },
      headers: { accept: 'text/html' },
    });
    const done = await client.post('/oidc/login/passkey', {
      form: { authRequestId: started.authRequestId, passkey: JSON.stringify(assertion) },
      headers: { accept: 'text/html' },
    });

    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('The passkey was not accepted.');
    expect(wrong.text).toContain('data-passkey="get"');
    expect(done.status).toBe(303);
    expect(payloadOf((await tokensFrom(client, started, done)).id_token).sub).toBe(user.id);
  });

  test('a disabled or deleted identity cannot sign in with its passkey', async () => {
    const disabled = await createUser(server, 'pl-disabled');
    const deleted = await createUser(server, 'pl-deleted');
    const a = await registerPasskey(server, disabled);
    const b = await registerPasskey(server, deleted);
    expect(
      (await api.post(`/identities/${disabled.id}/disable`, { body: { durationMinutes: 0 } })).status,
    ).toBe(200);
    expect((await api.delete(`/identities/${deleted.id}`)).status).toBe(200);

    const attempt = async (authenticator: typeof a) => {
      const started = await startAuthorization(client, { method: 'passkey' });
      const options = await passkeyOptions(client, started.authRequestId);
      return postPasskey(client, started.authRequestId, await authenticator.assert(options.body));
    };

    expectError(await attempt(a), { status: 401, code: 'INVALID_AUTH' });
    expectError(await attempt(b), { status: 401, code: 'INVALID_AUTH' });
  });

  test('a challenge of another auth request, or a used one, is refused', async () => {
    const user = await createUser(server, 'pl-binding');
    const authenticator = await registerPasskey(server, user);
    const first = await startAuthorization(client, { method: 'passkey' });
    const second = await startAuthorization(client, { method: 'passkey' });

    const options = await passkeyOptions(client, first.authRequestId);
    const assertion = await authenticator.assert(options.body);
    const elsewhere = await postPasskey(client, second.authRequestId, assertion);
    const fresh = await passkeyOptions(client, second.authRequestId);
    const used = await authenticator.assert(fresh.body);
    const done = await postPasskey(client, second.authRequestId, used);
    const third = await startAuthorization(client, { method: 'passkey' });
    const replayed = await postPasskey(client, third.authRequestId, used);

    expectError(elsewhere, { status: 401, code: 'INVALID_AUTH' });
    expect(done.status).toBe(303);
    expectError(replayed, { status: 401, code: 'INVALID_AUTH' });
  });

  test('legacy: options with a ceremony id, then /authenticate?method=passkey opens a complete session', async () => {
    const user = await createUser(server, 'pl-legacy');
    await enrollTotp(server, user);
    const authenticator = await registerPasskey(server, user);

    const started = await client.post('/edge/client/v1/authenticate/passkey/options');
    const other = await client.post('/edge/client/v1/authenticate/passkey/options');
    const { ceremonyId, options } = started.body.data;
    const assertion = await authenticator.assert(options);
    // The assertion of one ceremony sent with the id of another.
    const wrongCeremony = await client.post('/edge/client/v1/authenticate?method=passkey', {
      body: { ceremonyId: other.body.data.ceremonyId, passkey: assertion },
    });
    const session = await client.post('/edge/client/v1/authenticate?method=passkey', {
      body: { ceremonyId, passkey: assertion },
    });
    const current = await client.get('/edge/client/v1/current-api-session', {
      headers: { 'svc-session': session.body.data.token },
    });

    expect(options).toMatchObject({ userVerification: 'required', allowCredentials: [] });
    expectError(wrongCeremony, { status: 401, code: 'INVALID_AUTH' });
    expect(session.status).toBe(200);
    expect(session.body.data).toMatchObject({ identityId: user.id, isMfaRequired: false, authQueries: [] });
    expect([...current.body.data.amr].sort()).toEqual(['mfa', 'pop']);
    expect(current.body.data.authMethod).toBe('pop');
  });
});
