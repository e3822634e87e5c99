import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { pino } from 'pino';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  DEFAULT_REDIRECT_URI,
  authorizationPath,
  newPkce,
  startAuthorization,
} from '../helpers/oidc-client.js';
import type { TestResponse } from '../helpers/https-client.js';

/** Every log line the controller writes, parsed, so a test can ask whether an error was logged. */
function capturingLogger() {
  const lines: { level: number; msg?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, errors: () => lines.filter((l) => l.level >= 50) };
}

const nested = (levels: number) => '{"a":'.repeat(levels - 1) + '{}' + '}'.repeat(levels - 1);

describe('hostile input at the edge: control characters and deep nesting (docs/operations.md)', () => {
  let server: TestServer;
  let log: ReturnType<typeof capturingLogger>;
  let token: string;
  beforeAll(async () => {
    log = capturingLogger();
    server = await startTestServer({ logger: log.logger });
    token = await server.adminToken();
  });
  afterAll(() => server.close());

  const expectEdgeError = (res: TestResponse, field?: string) => {
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        code: 'COULD_NOT_VALIDATE',
        message: expect.any(String),
        cause: { field: field ?? expect.any(String), reason: expect.any(String) },
        requestId: expect.any(String),
      },
      meta: { apiVersion: '1' },
    });
  };

  const expectOauthError = (res: TestResponse, error: string) => {
    expect(res.status).toBe(400);
    expect(res.body).toEqual(expect.objectContaining({ error, error_description: expect.any(String) }));
  };

  test('NUL in a login body, the auth-queries query or the TOTP step is 400 COULD_NOT_VALIDATE, never logged as an error', async () => {
    const started = await startAuthorization(server.client, { method: 'password' });

    const responses = {
      loginJson: await server.client.post('/oidc/login/username', { body: { authRequestId: 'abc\u0000' } }),
      loginForm: await server.client.post('/oidc/login/password', {
        form: { authRequestId: started.authRequestId, username: 'u\u0000', password: 'p' },
      }),
      loginQuery: await server.client.get('/oidc/login/username?authRequestID=a%00b'),
      authQueries: await server.client.get('/oidc/login/auth-queries?id=a%00b'),
      totp: await server.client.post('/oidc/login/totp', { body: { id: 'abc\u0000', code: '123456' } }),
      totpPage: await server.client.get('/oidc/login/totp?id=a%00b'),
    };

    expectEdgeError(responses.loginJson, 'authRequestId');
    expectEdgeError(responses.loginForm, 'username');
    expectEdgeError(responses.loginQuery, 'authRequestID');
    expectEdgeError(responses.authQueries, 'id');
    expectEdgeError(responses.totp, 'id');
    expectEdgeError(responses.totpPage, 'id');
    expect(log.errors()).toEqual([]);
  });

  test('a member given twice in JSON, or a form key naming an Object.prototype property, is 400 at the edge, never logged as an error', async () => {
    const started = await startAuthorization(server.client, { method: 'password' });
    const twice = await server.client.post('/oidc/login/password', {
      headers: { 'content-type': 'application/json' },
      body: `{"authRequestId":"${started.authRequestId}","username":"x","username":"${ADMIN_USERNAME}","password":"p"}`,
    });
    const protoForm = await server.client.post('/oidc/login/password', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `authRequestId=${started.authRequestId}&username=u&password=p&__proto__[x]=1`,
    });
    const authenticate = await server.client.post('/edge/client/v1/authenticate?method=password', {
      headers: { 'content-type': 'application/json' },
      body: `{"username":"${ADMIN_USERNAME}","password":"wrong","password":"${ADMIN_PASSWORD}"}`,
    });
    expectEdgeError(twice, 'username');
    expectEdgeError(protoForm, '__proto__');
    expectEdgeError(authenticate, 'password');
    expect(JSON.stringify(authenticate.body)).not.toContain(ADMIN_PASSWORD);
    expect(log.errors()).toEqual([]);
  });

  test('other C0 controls are refused too, while TAB, LF and CR pass through to validation', async () => {
    const api = (body: unknown) =>
      server.client.post('/edge/management/v1/identities', {
        body,
        headers: { 'svc-session': token },
      });

    const bell = await api({ name: 'bell\u0007', isAdmin: false });
    const escapeInKey = await api({ name: 'k', isAdmin: false, tags: { 'a\u001b': 'x' } });
    const query = await server.client.get('/edge/management/v1/identities?filter=name%20%3D%20%22a%01%22', {
      headers: { 'svc-session': token },
    });
    const whitespace = await api({ name: 'ws', isAdmin: false, tags: { k: 'line\r\nnext\ttab' } });

    expectEdgeError(bell, 'name');
    expectEdgeError(escapeInKey, 'tags');
    expectEdgeError(query, 'filter');
    expect(whitespace.status).toBe(201);
    expect(log.errors()).toEqual([]);
  });

  test('line breaks, DEL, C1 and bidi controls are refused in single-line fields, kept in free text', async () => {
    const api = (body: unknown) =>
      server.client.post('/edge/management/v1/identities', { body, headers: { 'svc-session': token } });
    const refused = {
      cr: await api({ name: 'zz-evil\rtrusted-sensor', isAdmin: false }),
      lf: await api({ name: 'zz-nl\nFAKEID  fake-admin  User  true', isAdmin: false }),
      del: await api({ name: 'zz-del\u007f', isAdmin: false }),
      csi: await api({ name: 'zz-c1\u009b31mRED\u009b0m', isAdmin: false }),
      rtl: await api({ name: 'invoice\u202egnp.exe', isAdmin: false }),
      isolate: await api({ name: 'zz-iso\u2066x\u2069', isAdmin: false }),
      externalId: await api({ name: 'zz-ext', isAdmin: false, externalId: 'e\u0085' }),
      role: await api({ name: 'zz-role', isAdmin: false, roleAttributes: ['ops\tlab'] }),
      tagKey: await api({ name: 'zz-tag', isAdmin: false, tags: { 'k\u009b': 'v' } }),
      username: await api({ name: 'zz-user', isAdmin: false, enrollment: { updb: 'bob\r\nadmin' } }),
      policy: await server.client.post('/edge/management/v1/auth-policies', {
        body: { name: 'p\u202e' },
        headers: { 'svc-session': token },
      }),
    };
    const allowed = await api({ name: 'zz-ok-\u0645\u0631\u062d\u0628\u0627 é', isAdmin: false });

    for (const [field, res] of Object.entries(refused)) {
      const expected = ['externalId', 'username', 'tagKey', 'role', 'policy'].includes(field)
        ? undefined
        : 'name';
      expectEdgeError(res, expected);
    }
    expect(refused.username.body.error.cause.field).toBe('enrollment.updb');
    expect(refused.tagKey.body.error.cause.field).toBe('tags');
    expect(refused.role.body.error.cause.field).toBe('roleAttributes.0');
    expect(allowed.status).toBe(201);
    const listed = await server.client.get(
      `/edge/management/v1/identities?filter=${encodeURIComponent('name contains "zz-"')}`,
      { headers: { 'svc-session': token } },
    );
    expect(listed.body.data.map((i: { name: string }) => i.name)).toEqual([
      'zz-ok-\u0645\u0631\u062d\u0628\u0627 é',
    ]);
    expect(log.errors()).toEqual([]);
  });

  test('an unpaired UTF-16 surrogate with valid credentials is 400, not a jsonb error', async () => {
    // JSON.parse turns "\ud800" into a lone surrogate that PostgreSQL's jsonb refuses to store.
    const raw = (body: string, path: string, headers: Record<string, string> = {}) =>
      server.client.post(path, { body, headers: { 'content-type': 'application/json', ...headers } });
    const login = JSON.stringify({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD });
    const responses = {
      configTypes: await raw(
        login.replace(/}$/, ',"configTypes":["\\ud800"]}'),
        '/edge/management/v1/authenticate?method=password',
      ),
      tagKey: await raw(
        '{"name":"surrogate-tag","type":"Device","isAdmin":false,"tags":{"\\udc00":"v"}}',
        '/edge/management/v1/identities',
        {
          'svc-session': token,
        },
      ),
    };

    expectEdgeError(responses.configTypes, 'configTypes');
    expectEdgeError(responses.tagKey, 'tags');
    expect(log.errors()).toEqual([]);
  });

  test('NUL in a code, refresh token, client id or revoked token gets the OAuth answer for an unknown value', async () => {
    const pkce = newPkce();
    const form = (extra: Record<string, string>) => ({ client_id: 'svc', ...extra });

    const code = await server.client.post('/oidc/token', {
      form: form({
        grant_type: 'authorization_code',
        code: 'abc\u0000def',
        redirect_uri: DEFAULT_REDIRECT_URI,
        code_verifier: pkce.verifier,
      }),
    });
    const refresh = await server.client.post('/oidc/token', {
      form: form({ grant_type: 'refresh_token', refresh_token: 'a\u0000b' }),
    });
    const client = await server.client.post('/oidc/token', {
      form: { grant_type: 'refresh_token', refresh_token: 'x', client_id: 's\u0000vc' },
    });
    const revoke = await server.client.post('/oidc/revoke', { form: form({ token: 'a\u0000b' }) });
    const revokeHint = await server.client.post('/oidc/revoke', {
      form: form({ token: 'a\u0000b', token_type_hint: 'refresh_token' }),
    });

    expectOauthError(code, 'invalid_grant');
    expectOauthError(refresh, 'invalid_grant');
    expect([400, 401]).toContain(client.status);
    expect(client.body.error).toMatch(/^invalid_(client|request)$/);
    // RFC 7009 §2.2: an unknown token is answered like a revoked one.
    expect(revoke.status).toBe(200);
    expect(revokeHint.status).toBe(200);
    expect(log.errors()).toEqual([]);
  });

  test('NUL in an authorization request parameter is 400 invalid_request before the provider stores it', async () => {
    const pkce = newPkce();
    const path = authorizationPath({ method: 'password' }, pkce, 'st\u0000ate', 'nonce');

    const res = await server.client.get(path);
    const resume = await server.client.get('/oidc/authorization/abc?x=%00');

    expectOauthError(res, 'invalid_request');
    expect(resume.status).toBeGreaterThanOrEqual(400);
    expect(resume.status).toBeLessThan(500);
    expect(log.errors()).toEqual([]);
  });

  test('JSON nested deeper than 32 levels is 400 on field body; 32 levels reach validation', async () => {
    const post = (text: string) =>
      server.client.post('/edge/management/v1/identities', {
        body: text,
        headers: { 'svc-session': token, 'content-type': 'application/json' },
      });

    const deepest = await post(nested(10_000));
    const over = await post(nested(33));
    const deepArray = await post(
      `{"name":"n","isAdmin":false,"roleAttributes":${'['.repeat(40)}${']'.repeat(40)}}`,
    );
    const limit = await post(nested(32));

    expectEdgeError(deepest, 'body');
    expectEdgeError(over, 'body');
    expectEdgeError(deepArray, 'body');
    expect(limit.status).toBe(400);
    expect(limit.body.error.code).toBe('COULD_NOT_VALIDATE');
    expect(limit.body.error.cause.field).not.toBe('body');
    expect(log.errors()).toEqual([]);
  });
});
