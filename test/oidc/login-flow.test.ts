import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { generateRootCa } from '../../src/crypto/pki.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  DEFAULT_REDIRECT_URI,
  exchangeCode,
  newPkce,
  followToCallback,
  passwordLogin,
  startAuthorization,
  submitLogin,
  type StartedAuthorization,
} from '../helpers/oidc-client.js';
import { enrolledUpdbUser, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { payloadOf } from './oidc-fixtures.js';
import { expectError } from '../helpers/expect-error.js';
import { totpCode } from '../helpers/totp.js';
import { createUser, enrollTotp, partialLogin, postTotp } from '../second-factors/factor-fixtures.js';

describe('OIDC login endpoints', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(() => server.close());

  const admin = { username: ADMIN_USERNAME, password: ADMIN_PASSWORD };

  test('a JSON login answers the provider 303 to redirect_uri with code, state and iss, without cookies', async () => {
    const started = await startAuthorization(server.client, { method: 'password' });

    const login = await submitLogin(server.client, started, { body: admin });

    expect(started.loginLocation).toBe(`/oidc/login/username?authRequestID=${started.authRequestId}`);
    expect(login.status).toBe(303);
    expect(login.header('auth-request-id')).toBe(started.authRequestId);
    const callback = new URL(login.header('location')!);
    expect(`${callback.origin}${callback.pathname}`).toBe(started.redirectUri);
    expect(callback.searchParams.get('state')).toBe(started.state);
    expect(callback.searchParams.get('iss')).toBe(`${server.url}/oidc`);
    const token = await exchangeCode(server.client, {
      code: callback.searchParams.get('code')!,
      verifier: started.pkce.verifier,
    });
    expect(token.status).toBe(200);
  });

  test('a form login works the same way, and /oidc/login/password is an alias', async () => {
    const started = await startAuthorization(server.client);

    const login = await submitLogin(server.client, started, {
      form: true,
      body: admin,
      path: '/oidc/login/password',
    });

    const callback = await followToCallback(server.client, login);
    expect(callback.state).toBe(started.state);
  });

  test('the auth request id is also accepted as body `id` and as query `authRequestID`', async () => {
    const byId = await startAuthorization(server.client);
    const byQuery = await startAuthorization(server.client);

    const viaId = await server.client.post('/oidc/login/username', {
      body: { id: byId.authRequestId, ...admin },
    });
    const viaQuery = await server.client.post(`/oidc/login/username?authRequestID=${byQuery.authRequestId}`, {
      body: admin,
    });

    expect(viaId.status).toBe(303);
    expect(viaQuery.status).toBe(303);
    expect(viaQuery.header('auth-request-id')).toBe(byQuery.authRequestId);
  });

  test('the method is chosen by the hint, else by whether a client certificate was presented', async () => {
    const cert = await generateRootCa({ commonName: 'any client' });
    const withCert = server.newClient({ cert: cert.certPem, key: cert.keyPem });

    const hinted = await Promise.all(
      ['password', 'cert', 'ext-jwt'].map((method) => startAuthorization(server.client, { method })),
    );
    const plain = await startAuthorization(server.client);
    const presented = await startAuthorization(withCert);

    expect(hinted.map((s) => new URL(s.loginLocation, server.url).pathname)).toEqual([
      '/oidc/login/username',
      '/oidc/login/cert',
      '/oidc/login/ext-jwt',
    ]);
    expect(plain.loginLocation.startsWith('/oidc/login/username?')).toBe(true);
    expect(presented.loginLocation.startsWith('/oidc/login/cert?')).toBe(true);
  });

  test('GET of a login page answers JSON for API clients and a framing-proof HTML form for browsers', async () => {
    const started = await startAuthorization(server.client);

    const json = await server.client.get(started.loginLocation);
    const html = await server.client.get(started.loginLocation, { headers: { accept: 'text/html' } });
    const certPage = await server.client.get(`/oidc/login/cert?authRequestID=${started.authRequestId}`, {
      headers: { accept: 'text/html' },
    });
    const extJwtPage = await server.client.get(`/oidc/login/ext-jwt?authRequestID=${started.authRequestId}`, {
      headers: { accept: 'text/html' },
    });

    expect(json.status).toBe(200);
    expect(json.body).toEqual({ authRequestId: started.authRequestId, method: 'password' });
    expect(json.header('auth-request-id')).toBe(started.authRequestId);
    expect(html.status).toBe(200);
    expect(html.header('content-type')).toMatch(/^text\/html/);
    expect(html.header('content-security-policy')).toContain("frame-ancestors 'none'");
    // The one inline stylesheet is allowed by its hash; nothing else inline would run.
    expect(html.header('content-security-policy')).toMatch(/style-src 'sha256-[A-Za-z0-9+/]+=*'/);
    expect(html.header('content-security-policy')).not.toContain('unsafe-inline');
    expect(html.text).toContain('<form method="post" action="/oidc/login/username">');
    expect(html.text).toContain(`name="authRequestId" value="${started.authRequestId}"`);
    expect(html.text).toMatch(/name="username"/);
    expect(html.text).toMatch(/name="password" type="password"/);
    expect(certPage.text).toContain('client certificate');
    expect(extJwtPage.text).toContain('Authorization: Bearer');
  });

  test('a browser signs in through the HTML page: form post, a wrong password shown, then redirects', async () => {
    const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
    const started = await startAuthorization(server.client, { headers: html });
    const page = await server.client.get(started.loginLocation, { headers: html });
    const action = /action="([^"]+)"/.exec(page.text)![1]!;
    const authRequestId = /name="authRequestId" value="([^"]+)"/.exec(page.text)![1]!;

    const wrong = await server.client.post(action, {
      form: { authRequestId, username: ADMIN_USERNAME, password: 'wrong' },
      headers: html,
    });
    const right = await server.client.post(action, {
      form: { authRequestId, ...admin },
      headers: html,
    });

    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('The credentials were not accepted.');
    expect(wrong.text).toContain('<form method="post"');
    const callback = await followToCallback(server.client, right);
    const token = await exchangeCode(server.client, { code: callback.code, verifier: started.pkce.verifier });
    expect(token.status).toBe(200);
  });

  test('a browser that keeps cookies logs in again, also as another user, each time with a new API session', async () => {
    const user = await enrolledUpdbUser(server, api, 'oidc-second-browser-user');
    const jar = new Map<string, string>();
    const keep = (res: { headerAll(name: string): string[] }) => {
      for (const c of res.headerAll('set-cookie')) {
        const [pair] = c.split(';');
        const at = pair!.indexOf('=');
        jar.set(pair!.slice(0, at), pair!.slice(at + 1));
      }
    };
    const headers = () => ({ cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') });
    const loginAs = async (username: string, password: string) => {
      const started = await startAuthorization(server.client, { headers: headers() });
      keep(started.response);
      const login = await submitLogin(server.client, started, {
        body: { username, password },
        headers: headers(),
      });
      keep(login);
      const callback = await followToCallback(server.client, login);
      const token = await exchangeCode(server.client, {
        code: callback.code,
        verifier: started.pkce.verifier,
      });
      return payloadOf(token.body.access_token);
    };

    const first = await loginAs(ADMIN_USERNAME, ADMIN_PASSWORD);
    const second = await loginAs(user.username, user.password);
    const third = await loginAs(user.username, user.password);

    expect([...jar.keys()].some((k) => k.startsWith('_session'))).toBe(true);
    expect(second.sub).toBe(user.id);
    expect(first.sub).not.toBe(second.sub);
    expect(new Set([first.z_asid, second.z_asid, third.z_asid]).size).toBe(3);
  });

  test('an authorization request whose scope lacks openid is refused: invalid_scope to a trusted redirect_uri, else 400', async () => {
    const query = (redirectUri: string, scope: string | undefined) => {
      const params = new URLSearchParams({
        response_type: 'code',
        client_id: 'svc',
        redirect_uri: redirectUri,
        state: 'st-123',
        code_challenge: newPkce().challenge,
        code_challenge_method: 'S256',
      });
      if (scope !== undefined) params.set('scope', scope);
      return `/oidc/authorization?${params}`;
    };

    const noOpenid = await server.client.get(query(DEFAULT_REDIRECT_URI, 'offline_access'));
    const noScope = await server.client.get(query(DEFAULT_REDIRECT_URI, undefined));
    const untrusted = await server.client.get(query('https://attacker.example/cb', 'offline_access'));

    for (const refused of [noOpenid, noScope]) {
      expect(refused.status).toBe(303);
      const location = new URL(refused.header('location')!);
      expect(`${location.origin}${location.pathname}`).toBe(DEFAULT_REDIRECT_URI);
      expect(location.searchParams.get('error')).toBe('invalid_scope');
      expect(location.searchParams.get('state')).toBe('st-123');
      expect(location.searchParams.get('iss')).toBe(`${server.url}/oidc`);
      expect(location.searchParams.get('code')).toBeNull();
    }
    expect(untrusted.status).toBe(400);
    expect(untrusted.header('location')).toBeUndefined();
    expect((untrusted.body as { error: string }).error).toBe('invalid_redirect_uri');
  });

  test('wrong credentials answer 401 INVALID_AUTH and the auth request stays usable', async () => {
    const started = await startAuthorization(server.client);

    const wrong = await submitLogin(server.client, started, {
      body: { username: ADMIN_USERNAME, password: 'x' },
    });
    const unknown = await submitLogin(server.client, started, {
      body: { username: 'nobody', password: 'x' },
    });
    const right = await submitLogin(server.client, started, { body: admin });

    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('INVALID_AUTH');
    expect(wrong.header('auth-request-id')).toBe(started.authRequestId);
    expect(unknown.status).toBe(401);
    expect(right.status).toBe(303);
  });

  test('an unknown, missing or already completed auth request is 400 INVALID_AUTH_REQUEST', async () => {
    const started = await startAuthorization(server.client);
    await followToCallback(server.client, await submitLogin(server.client, started, { body: admin }));

    const unknown = await server.client.post('/oidc/login/username', {
      body: { authRequestId: 'nope', ...admin },
    });
    const missing = await server.client.post('/oidc/login/username', { body: admin });
    const again = await submitLogin(server.client, started, { body: admin });
    const page = await server.client.get('/oidc/login/username?authRequestID=nope');

    for (const res of [unknown, missing, again, page]) {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('INVALID_AUTH_REQUEST');
    }
  });

  test('a body that is neither JSON nor a form is 415', async () => {
    const started = await startAuthorization(server.client);

    const res = await server.client.post('/oidc/login/username', {
      body: `authRequestId=${started.authRequestId}`,
      headers: { 'content-type': 'text/plain' },
    });

    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  test('configTypes of the authorization request (repeated) or of the login body fill z_ct', async () => {
    const fromQuery = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD, {
      configTypes: ['ct-one', 'ct-two'],
    });
    const fromBody = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD, {
      configTypes: ['ignored'],
      body: { configTypes: ['from-body'] },
    });
    const fromForm = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD, {
      form: true,
      body: { configTypes: ['f1', 'f2'] },
    });
    const none = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const tooMany = await server.client.get(
      `/oidc/authorization?${Array.from({ length: 33 }, (_, i) => `configTypes=c${i}`).join('&')}&client_id=svc`,
    );

    expect(payloadOf(fromQuery.tokens.access_token).z_ct).toEqual(['ct-one', 'ct-two']);
    expect(payloadOf(fromBody.tokens.access_token).z_ct).toEqual(['from-body']);
    expect(payloadOf(fromForm.tokens.access_token).z_ct).toEqual(['f1', 'f2']);
    expect(payloadOf(none.tokens.access_token).z_ct).toEqual([]);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toBe('invalid_request');
  });

  test('an identity deleted or disabled during its login fails at the next step', async () => {
    // Each auth request has passed the password step for its identity and owes a TOTP code, so
    // it is bound to that identity when the identity goes away.
    const [deleted, disabled, untouched] = await Promise.all(
      ['oidc-deleted-midway', 'oidc-disabled-midway', 'oidc-untouched-midway'].map((n) =>
        createUser(server, n),
      ),
    );
    const totps: Awaited<ReturnType<typeof enrollTotp>>[] = [];
    for (const user of [deleted, disabled, untouched]) totps.push(await enrollTotp(server, user));
    const pending: StartedAuthorization[] = [];
    for (const user of [deleted, disabled, untouched]) {
      const partial = await partialLogin(server.client, user);
      expect(partial.response.status).toBe(200);
      expect(partial.response.header('totp-required')).toBe('true');
      pending.push(partial.started);
    }
    const codeHolder = await enrolledUpdbUser(server, api, 'oidc-deleted-with-code');
    const startedCode = await startAuthorization(server.client);
    const codeLogin = await submitLogin(server.client, startedCode, {
      body: { username: codeHolder.username, password: codeHolder.password },
    });
    const { code } = await followToCallback(server.client, codeLogin);

    expect((await api.delete(`/identities/${deleted.id}`)).status).toBe(200);
    expect(
      (await api.post(`/identities/${disabled.id}/disable`, { body: { durationMinutes: 0 } })).status,
    ).toBe(200);
    expect((await api.delete(`/identities/${codeHolder.id}`)).status).toBe(200);

    const nextStep = async (i: number) =>
      postTotp(server.client, pending[i]!.authRequestId, await totpCode(totps[i]!.url, totps[i]!.step + 1));
    const afterDelete = await nextStep(0);
    const afterDisable = await nextStep(1);
    const control = await nextStep(2);
    const exchange = await exchangeCode(server.client, { code, verifier: startedCode.pkce.verifier });

    // Deleting or disabling ends the identity's pending auth requests with it.
    expectError(afterDelete, { status: 400, code: 'INVALID_AUTH_REQUEST' });
    expectError(afterDisable, { status: 400, code: 'INVALID_AUTH_REQUEST' });
    // Control: the same step completes the login of an identity left alone.
    expect(control.status).toBe(303);
    expect(exchange.status).toBe(400);
    expect(exchange.body.error).toBe('invalid_grant');
  });
});
