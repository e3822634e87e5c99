import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import {
  generateClientKeyAndCsr,
  generateRootCa,
  issueClientCert,
  type KeyedCert,
} from '../../src/crypto/pki.js';
import type { HttpsClient, RequestOptions, TestResponse } from '../helpers/https-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { createSoftAuthenticator } from '../helpers/soft-authenticator.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { localClient, registerPasskey } from '../passkey-login/passkey-login-fixtures.js';
import { createResponseValidator, operationsOf, type ResponseValidator } from './response-validator.js';

/**
 * Every operation of both generated documents is called for real: its success, and errors (no
 * credentials, a non-admin caller, an unknown id, a bad body or token). Each answer is validated
 * with Ajv against the document served at `…/spec`, and the last test fails if an operation was
 * left without a validated success or error.
 */

type Api = 'client' | 'management';
const PREFIX: Record<Api, string> = { client: '/edge/client/v1', management: '/edge/management/v1' };

interface Call extends RequestOptions {
  /** The real path when the document's has parameters, e.g. `/identities/abc`. */
  url?: string;
  token?: string;
  client?: HttpsClient;
  /** The status the call must get; `'error'`: any 4xx. */
  status: number | 'error';
}

describe('real responses of every documented operation validate against the generated OpenAPI', () => {
  let server: TestServer;
  const docs = {} as Record<Api, any>;
  const validators = {} as Record<Api, ResponseValidator>;
  let admin: string;

  async function call(api: Api, method: string, path: string, o: Call): Promise<TestResponse> {
    const { url = path, token, client = server.client, status, ...options } = o;
    const headers = { ...(token ? { 'svc-session': token } : {}), ...options.headers };
    const res = await client.request(method, PREFIX[api] + url, { ...options, headers });
    const what = `${api} ${method} ${url}`;
    if (status === 'error') {
      expect({ [what]: res.status >= 400 && res.status < 500 }).toEqual({ [what]: true });
    } else {
      if (res.status !== status)
        throw new Error(`${what}: ${res.status}, not ${status}: ${res.text.slice(0, 300)}`);
    }
    expect(validators[api].check(method, path, res)).toEqual({ [`${method} ${path} → ${res.status}`]: [] });
    return res;
  }

  const login = async (api: Api, username: string, password: string) =>
    (
      await call(api, 'POST', '/authenticate', {
        url: '/authenticate?method=password',
        body: { username, password },
        status: 200,
      })
    ).body.data;

  /** An identity with a UPDB enrollment, enrolled through the client API; returns its id and password. */
  async function updbUser(name: string): Promise<{ id: string; password: string }> {
    const created = await call('management', 'POST', '/identities', {
      token: admin,
      body: { name, isAdmin: false, enrollment: { updb: name } },
      status: 201,
    });
    const id = created.body.data.id as string;
    const detail = await call('management', 'GET', '/identities/{id}', {
      url: `/identities/${id}`,
      token: admin,
      status: 200,
    });
    const password = `Pw-${name}-1234`;
    await call('client', 'POST', '/enroll/updb', {
      url: `/enroll/updb?token=${detail.body.data.enrollment.updb.token}`,
      body: { password },
      status: 200,
    });
    return { id, password };
  }

  /** The open enrollment of a new identity, for the client's enroll endpoints. */
  async function enrollmentToken(name: string, enrollment: Record<string, unknown>): Promise<string> {
    const created = await call('management', 'POST', '/identities', {
      token: admin,
      body: { name, isAdmin: false, enrollment },
      status: 201,
    });
    const detail = await server.client.get(`${PREFIX.management}/identities/${created.body.data.id}`, {
      headers: { 'svc-session': admin },
    });
    const [open] = Object.values(detail.body.data.enrollment) as { token: string }[];
    return open!.token;
  }

  const mtls = (cert: KeyedCert) => server.newClient({ cert: cert.certPem, key: cert.keyPem });

  beforeAll(async () => {
    server = await startTestServer();
    for (const api of ['client', 'management'] as const) {
      docs[api] = (await server.client.get(`${PREFIX[api]}/spec`)).body;
      validators[api] = createResponseValidator(docs[api]);
      await call(api, 'GET', '/spec', { status: 200 });
      // Every query string is screened for control characters before any route runs.
      await call(api, 'GET', '/spec', { url: '/spec?q=%01', status: 400 });
    }
    admin = (await login('management', ADMIN_USERNAME, ADMIN_PASSWORD)).token;
  }, 120_000);
  afterAll(() => server.close());

  test('without credentials, every secured operation answers its documented 401', async () => {
    for (const api of ['client', 'management'] as const) {
      for (const { method, path, operation } of operationsOf(docs[api])) {
        if (operation.security.length === 0) continue;
        await call(api, method, path, { url: path.replace(/\{\w+\}/g, 'openapi-probe'), status: 401 });
      }
    }
  });

  test('login: a wrong password is 401, a right one a session with its documented shape', async () => {
    for (const api of ['client', 'management'] as const) {
      await call(api, 'POST', '/authenticate', {
        url: '/authenticate?method=password',
        body: { username: ADMIN_USERNAME, password: 'wrong-password-1' },
        status: 401,
      });
      const session = await login(api, ADMIN_USERNAME, ADMIN_PASSWORD);
      await call(api, 'GET', '/current-identity', { token: session.token, status: 200 });
    }
  });

  test("login over its policy's session limit: the documented 403 SESSION_LIMIT_REACHED", async () => {
    const policy = await call('management', 'POST', '/auth-policies', {
      token: admin,
      body: { name: 'oa-one-session', sessions: { max: 1, onLimit: 'refuse' } },
      status: 201,
    });
    const user = await updbUser('oa-limited');
    await call('management', 'PATCH', '/identities/{id}', {
      url: `/identities/${user.id}`,
      token: admin,
      body: { authPolicyId: policy.body.data.id },
      status: 200,
    });
    await login('client', 'oa-limited', user.password);
    for (const api of ['client', 'management'] as const) {
      await call(api, 'POST', '/authenticate', {
        url: '/authenticate?method=password',
        body: { username: 'oa-limited', password: user.password },
        status: 403,
      });
    }
  });

  test('management: a non-admin gets 403, an unknown id its documented error, on every admin operation', async () => {
    const user = await updbUser('oa-non-admin');
    const { token } = await login('management', 'oa-non-admin', user.password);
    for (const { method, path, operation } of operationsOf(docs.management)) {
      // Admin operations answer FORBIDDEN; a login's 403 is its policy's session limit (below).
      if (!String(operation.responses['403']?.$ref ?? '').includes('FORBIDDEN')) continue;
      const url = path.replace(/\{\w+\}/g, 'openapi-probe');
      await call('management', method, path, { url, token, status: 403 });
      if (path.includes('{id}')) {
        const body = method === 'GET' ? {} : { body: {} };
        await call('management', method, path, { url, token: admin, ...body, status: 'error' });
      }
    }
  });

  test('management: identities, enrollments and authenticators', async () => {
    const m = (method: string, path: string, o: Omit<Call, 'token'>) =>
      call('management', method, path, { token: admin, ...o });
    await m('POST', '/identities', { body: { isAdmin: 'maybe' }, status: 400 });
    await m('GET', '/identities', { url: '/identities?limit=0', status: 400 });
    const created = await m('POST', '/identities', {
      body: { name: 'oa-ident', isAdmin: false, enrollment: { ott: true } },
      status: 201,
    });
    const id = created.body.data.id as string;
    const item = `/identities/${id}`;
    await m('GET', '/identities', { status: 200 });
    await m('GET', '/identities/{id}', { url: item, status: 200 });
    await m('PUT', '/identities/{id}', {
      url: item,
      body: { name: 'oa-ident-2', isAdmin: false },
      status: 200,
    });
    await m('PATCH', '/identities/{id}', { url: item, body: { tags: { a: 1 } }, status: 200 });
    await m('POST', '/identities/{id}/disable', {
      url: `${item}/disable`,
      body: { durationMinutes: 5 },
      status: 200,
    });
    await m('POST', '/identities/{id}/enable', { url: `${item}/enable`, status: 200 });
    await m('DELETE', '/identities/{id}/mfa', { url: `${item}/mfa`, status: 200 });

    const enrollments = await m('GET', '/enrollments', {
      url: `/enrollments?filter=${encodeURIComponent(`identityId = "${id}"`)}`,
      status: 200,
    });
    const enrollmentId = enrollments.body.data[0].id as string;
    await m('GET', '/enrollments', { url: '/enrollments?sort=nothing', status: 400 });
    await m('GET', '/enrollments/{id}', { url: `/enrollments/${enrollmentId}`, status: 200 });
    await m('POST', '/enrollments/{id}/refresh', {
      url: `/enrollments/${enrollmentId}/refresh`,
      body: { expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
      status: 200,
    });
    await m('POST', '/enrollments', { body: { identityId: id, method: 'ott' }, status: 409 });
    await m('DELETE', '/enrollments/{id}', { url: `/enrollments/${enrollmentId}`, status: 200 });
    await m('POST', '/enrollments', { body: { identityId: id, method: 'ott' }, status: 201 });

    // A certificate authenticator, made by completing an OTT enrollment.
    const token = await enrollmentToken('oa-ott', { ott: true });
    await call('client', 'POST', '/enroll/ott', {
      body: { token: 'no-such-token', clientCsr: 'x' },
      status: 400,
    });
    const { csrPem } = await generateClientKeyAndCsr({ commonName: 'oa-ott' });
    await call('client', 'POST', '/enroll/ott', { body: { token, clientCsr: csrPem }, status: 200 });
    const authenticators = await m('GET', '/authenticators', { status: 200 });
    await m('GET', '/authenticators', { url: '/authenticators?filter=nope', status: 400 });
    const cert = authenticators.body.data.find((a: any) => a.method === 'cert');
    const updb = authenticators.body.data.find((a: any) => a.method === 'updb');
    await m('GET', '/authenticators/{id}', { url: `/authenticators/${updb.id}`, status: 200 });
    await m('GET', '/authenticators/{id}', { url: `/authenticators/${cert.id}`, status: 200 });
    await m('DELETE', '/authenticators/{id}', { url: `/authenticators/${cert.id}`, status: 200 });

    await m('DELETE', '/identities/{id}', { url: item, status: 200 });

    // API sessions: one ended by its id, then every one of an identity's.
    const holder = await updbUser('oa-sessions');
    const session = await login('client', 'oa-sessions', holder.password);
    await login('client', 'oa-sessions', holder.password);
    const ending = `/api-sessions/${session.id}`;
    await m('DELETE', '/api-sessions/{id}', { url: ending, status: 200 });
    await m('DELETE', '/api-sessions/{id}', { url: ending, status: 404 });
    const all = `/identities/${holder.id}/api-sessions`;
    await m('DELETE', '/identities/{id}/api-sessions', { url: all, status: 200 });
  });

  test('management: auth policies, external JWT signers, CAs and signing keys', async () => {
    const m = (method: string, path: string, o: Omit<Call, 'token'>) =>
      call('management', method, path, { token: admin, ...o });
    const crud = async (collection: string, create: object, replace: object, patch: object, bad: object) => {
      await m('POST', collection, { body: bad, status: 400 });
      const id = (await m('POST', collection, { body: create, status: 201 })).body.data.id as string;
      const item = `${collection}/${id}`;
      await m('GET', collection, { status: 200 });
      await m('GET', collection, { url: `${collection}?offset=-1`, status: 400 });
      await m('GET', `${collection}/{id}`, { url: item, status: 200 });
      await m('PUT', `${collection}/{id}`, { url: item, body: replace, status: 200 });
      await m('PATCH', `${collection}/{id}`, { url: item, body: patch, status: 200 });
      return item;
    };

    const policy = await crud(
      '/auth-policies',
      { name: 'oa-policy' },
      { name: 'oa-policy-2' },
      { name: 'oa-policy-3' },
      { name: '' },
    );
    await m('DELETE', '/auth-policies/{id}', { url: policy, status: 200 });

    const signerCa = await generateRootCa({ commonName: 'oa signer' });
    const signer = await crud(
      '/external-jwt-signers',
      { name: 'oa-signer', issuer: 'https://issuer.example', audience: 'svc', certPem: signerCa.certPem },
      { name: 'oa-signer-2', issuer: 'https://issuer.example', audience: 'svc', certPem: signerCa.certPem },
      {
        enabled: true,
        externalAuthUrl: 'https://issuer.example/authorize',
        clientId: 'oa',
        scopes: ['openid'],
      },
      { name: 'no-issuer' },
    );
    await call('client', 'GET', '/external-jwt-signers', { status: 200 });
    await call('client', 'GET', '/external-jwt-signers', {
      url: '/external-jwt-signers?limit=x',
      status: 400,
    });
    await m('DELETE', '/external-jwt-signers/{id}', { url: signer, status: 200 });

    const ca = await generateRootCa({ commonName: 'oa ca' });
    const flags = { isAuthEnabled: true, isOttCaEnrollmentEnabled: true, isAutoCaEnrollmentEnabled: true };
    const caItem = await crud(
      '/cas',
      { name: 'oa-ca', certPem: ca.certPem, ...flags },
      { name: 'oa-ca-2', ...flags },
      { identityRoles: ['devices'] },
      { name: 'oa-ca', certPem: 'not a certificate' },
    );
    const { verificationToken } = (await m('GET', '/cas/{id}', { url: caItem, status: 200 })).body.data;
    const proof = await issueClientCert(ca, { commonName: verificationToken });
    const verify = (status: number) =>
      m('POST', '/cas/{id}/verify', {
        url: `${caItem}/verify`,
        body: proof.certPem,
        headers: { 'content-type': 'text/plain' },
        status,
      });
    await verify(200);
    await verify(409);

    // The verified CA: enrollment by its certificates, with a token (ottca) and without (auto).
    const caId = caItem.split('/')[2]!;
    const ottca = await enrollmentToken('oa-ottca', { ottca: caId });
    const device = await issueClientCert(ca, { commonName: 'oa-device' });
    await call('client', 'POST', '/enroll/ottca', { body: { token: 'no-such-token' }, status: 400 });
    await call('client', 'POST', '/enroll/ottca', {
      client: mtls(device),
      body: { token: ottca },
      status: 200,
    });
    for (const path of ['/enroll/ca', '/enroll']) {
      const url = path === '/enroll' ? '/enroll?method=ca' : path;
      await call('client', 'POST', path, { url, status: 401 });
      const auto = await issueClientCert(ca, { commonName: `oa-auto${path.replace(/\//g, '-')}` });
      await call('client', 'POST', path, { url, client: mtls(auto), body: { name: 'oa-auto' }, status: 200 });
      await call('client', 'POST', path, { url, client: mtls(auto), status: 409 });
    }
    await call('client', 'POST', '/enroll', { url: '/enroll?method=ott', status: 400 });

    // Deleting an auto-enrolled identity blocks its certificate; the block is listed and lifted.
    const gone = await issueClientCert(ca, { commonName: 'oa-blocked' });
    await call('client', 'POST', '/enroll', { url: '/enroll?method=ca', client: mtls(gone), status: 200 });
    const [goneIdentity] = (
      await m('GET', '/identities', {
        url: `/identities?filter=${encodeURIComponent('name contains "oa-blocked"')}`,
        status: 200,
      })
    ).body.data;
    await m('DELETE', '/identities/{id}', { url: `/identities/${goneIdentity.id}`, status: 200 });
    const blocked = `/cas/${caId}/blocked-certificates`;
    const [entry] = (await m('GET', '/cas/{id}/blocked-certificates', { url: blocked, status: 200 })).body
      .data;
    await m('GET', '/cas/{id}/blocked-certificates', { url: `${blocked}?filter=nope`, status: 400 });
    const lift = (status: number) =>
      m('DELETE', '/cas/{id}/blocked-certificates/{entryId}', { url: `${blocked}/${entry.id}`, status });
    await lift(200);
    await lift(404);

    const other = await generateRootCa({ commonName: 'oa other ca' });
    const otherId = (
      await m('POST', '/cas', { body: { name: 'oa-other', certPem: other.certPem }, status: 201 })
    ).body.data.id;
    await m('DELETE', '/cas/{id}', { url: `/cas/${otherId}`, status: 200 });

    await m('GET', '/keys', { status: 200 });
    await m('POST', '/keys/rotate', { status: 200 });
  });

  test('client: enrollment by password, the session, and self-service TOTP on both APIs', async () => {
    await call('client', 'POST', '/enroll/updb', {
      url: '/enroll/updb?token=no-such-token',
      body: { password: 'Pw-nobody-1234' },
      status: 400,
    });
    const user = await updbUser('oa-mfa');
    const { token } = await login('client', 'oa-mfa', user.password);
    const c = (method: string, path: string, o: Omit<Call, 'token'>) =>
      call('client', method, path, { token, ...o });

    await c('GET', '/current-api-session', { status: 200 });
    const ending = await login('client', 'oa-mfa', user.password);
    await call('client', 'DELETE', '/current-api-session', { token: ending.token, status: 200 });
    const own = `/current-identity/api-sessions/${(await login('client', 'oa-mfa', user.password)).id}`;
    await c('DELETE', '/current-identity/api-sessions/{id}', { url: own, status: 200 });
    await c('DELETE', '/current-identity/api-sessions/{id}', { url: own, status: 404 });

    const mfa = '/current-identity/mfa';
    await c('GET', mfa, { status: 404 });
    await c('GET', `${mfa}/qr-code`, { status: 404 });
    await c('GET', `${mfa}/recovery-codes`, { status: 404 });
    await c('POST', `${mfa}/recovery-codes`, { body: { code: '123456' }, status: 404 });
    await c('DELETE', mfa, { status: 404 });
    await c('POST', `${mfa}/verify`, { body: { code: '123456' }, status: 404 });

    await c('POST', mfa, { status: 201 });
    await c('POST', mfa, { status: 409 });
    await c('GET', `${mfa}/qr-code`, { status: 200 });
    await c('DELETE', mfa, { status: 200 });
    const started = (await c('POST', mfa, { status: 201 })).body.data;
    await c('GET', mfa, { status: 200 });

    const step = timeStepAt();
    const valid = await Promise.all(
      [step - 1, step, step + 1].map((s) => totpCode(started.provisioningUrl, s)),
    );
    const wrong = ['000000', '111111', '222222', '333333'].find((code) => !valid.includes(code))!;
    await c('POST', `${mfa}/verify`, { body: { code: wrong }, status: 400 });
    await c('POST', `${mfa}/verify`, { body: { code: valid[1] }, status: 200 });
    await c('GET', `${mfa}/recovery-codes`, { status: 200 });
    const [first, ...rest] = started.recoveryCodes as string[];
    const codes = (await c('POST', `${mfa}/recovery-codes`, { body: { code: first }, status: 200 })).body.data
      .recoveryCodes as string[];
    expect(rest.length).toBeGreaterThan(0);

    // A login now owes the TOTP step; a recovery code completes it, on either API.
    for (const [i, api] of (['client', 'management'] as const).entries()) {
      const owing = await login(api, 'oa-mfa', user.password);
      expect(owing).toMatchObject({ isMfaRequired: true, authQueries: [{ typeId: 'MFA' }] });
      if (i === 0)
        await call(api, 'POST', '/authenticate/mfa', {
          token: owing.token,
          body: { code: wrong },
          status: 400,
        });
      else await call(api, 'POST', '/authenticate/mfa', { token: owing.token, body: {}, status: 400 });
      await call(api, 'POST', '/authenticate/mfa', {
        token: owing.token,
        body: { code: codes[i] },
        status: 200,
      });
    }

    await c('DELETE', mfa, { status: 400 });
    await c('DELETE', mfa, { body: { code: codes[2] }, status: 200 });
  });

  test('client: passkeys (an extension): options, registration, list, rename, removal', async () => {
    const user = await updbUser('oa-passkey');
    const port = new URL(server.url).port;
    const named = server.newClient({}, `https://localhost:${port}`);
    const { token } = await login('client', 'oa-passkey', user.password);
    const c = (method: string, path: string, o: Omit<Call, 'token'>) =>
      call('client', method, path, { token, client: named, ...o });
    const passkeys = '/current-identity/passkeys';
    const authenticator = createSoftAuthenticator({ origin: `https://localhost:${port}`, rpId: 'localhost' });

    // Reached by its IP address, the site cannot hold passkeys.
    await call('client', 'POST', `${passkeys}/options`, { token, status: 409 });
    await c('POST', `${passkeys}/options`, { body: { unknown: 1 }, status: 400 });
    const { options } = (await c('POST', `${passkeys}/options`, { status: 200 })).body.data;
    const response = await authenticator.register(options);
    await c('POST', passkeys, { body: { name: 'laptop', response: { garbage: true } }, status: 400 });
    const created = (await c('POST', passkeys, { body: { name: 'laptop', response }, status: 201 })).body
      .data;
    await c('GET', passkeys, { status: 200 });
    const one = `${passkeys}/${created.id}`;
    await c('PATCH', `${passkeys}/{id}`, { url: one, body: { name: 'phone' }, status: 200 });
    await c('PATCH', `${passkeys}/{id}`, { url: `${passkeys}/nope`, body: { name: 'x' }, status: 404 });
    await c('DELETE', `${passkeys}/{id}`, { url: one, status: 200 });
    await c('DELETE', `${passkeys}/{id}`, { url: one, status: 404 });
  });

  test("API sessions: the management lists and detail, and the caller's own list", async () => {
    const m = (method: string, path: string, o: Omit<Call, 'token'>) =>
      call('management', method, path, { token: admin, ...o });
    const mine = await login('client', ADMIN_USERNAME, ADMIN_PASSWORD);
    const listed = await m('GET', '/api-sessions', { status: 200 });
    expect(listed.body.data.length).toBeGreaterThan(0);
    await m('GET', '/api-sessions', { url: '/api-sessions?filter=kind%20%3E%20%22a%22', status: 400 });
    await m('GET', '/api-sessions/{id}', { url: `/api-sessions/${mine.id}`, status: 200 });
    await m('GET', '/api-sessions/{id}', { url: '/api-sessions/no-such-session', status: 404 });
    const identityId = mine.identityId as string;
    await m('GET', '/identities/{id}/api-sessions', {
      url: `/identities/${identityId}/api-sessions`,
      status: 200,
    });
    await m('GET', '/identities/{id}/api-sessions', {
      url: '/identities/no-such-identity/api-sessions',
      status: 404,
    });
    const own = await call('client', 'GET', '/current-identity/api-sessions', {
      token: mine.token,
      status: 200,
    });
    expect(own.body.data.filter((s: { isCurrent: boolean }) => s.isCurrent)).toHaveLength(1);
    await call('client', 'GET', '/current-identity/api-sessions', {
      url: '/current-identity/api-sessions?filter=createdAt%20%3E%3D%20%22soon%22',
      token: mine.token,
      status: 400,
    });
  });

  test('passkeys (an extension): the legacy options, a passwordless session, its MFA options', async () => {
    // Passkeys work at a DNS name only: at the IP address every passkey operation answers 409.
    const local = localClient(server);
    const user = await updbUser('oa-passkey-login');
    const authenticator = await registerPasskey(server, { id: user.id, name: 'oa-passkey-login' });
    for (const api of ['client', 'management'] as const) {
      await call(api, 'POST', '/authenticate/passkey/options', { status: 409 });
      const { ceremonyId, options } = (
        await call(api, 'POST', '/authenticate/passkey/options', { client: local, status: 200 })
      ).body.data;
      const session = await call(api, 'POST', '/authenticate', {
        url: '/authenticate?method=passkey',
        client: local,
        body: { ceremonyId, passkey: await authenticator.assert(options) },
        status: 200,
      });
      const token = session.body.data.token as string;
      await call(api, 'POST', '/authenticate/mfa/passkey/options', { client: local, token, status: 200 });
      await call(api, 'POST', '/authenticate/mfa/passkey/options', {
        client: local,
        token: admin,
        status: 404,
      });
    }
  });

  test('management: webhooks, their secret rotation, deliveries and retries', async () => {
    const m = (method: string, path: string, o: Omit<Call, 'token'>) =>
      call('management', method, path, { token: admin, ...o });
    const body = { name: 'oa-webhook', url: 'https://receiver.example.com/oa', events: ['identity.*'] };
    await m('POST', '/webhooks', { body: { ...body, url: 'http://receiver.example.com/oa' }, status: 400 });
    const id = (await m('POST', '/webhooks', { body, status: 201 })).body.data.id as string;
    const item = `/webhooks/${id}`;
    await m('GET', '/webhooks', { status: 200 });
    await m('GET', '/webhooks', { url: '/webhooks?sort=secret', status: 400 });
    await m('GET', '/webhooks/{id}', { url: item, status: 200 });
    await m('PATCH', '/webhooks/{id}', { url: item, body: { enabled: false }, status: 200 });
    await m('POST', '/webhooks/{id}/rotate-secret', { url: `${item}/rotate-secret`, status: 200 });
    await m('GET', '/webhooks/{id}', { url: item, status: 200 });
    const deliveries = `${item}/deliveries`;
    const sent = async (sequence: number, status: string) => {
      const deliveryId = `oa-delivery-${sequence}`;
      await server.app.knex('webhook_deliveries').insert({
        id: deliveryId,
        webhook_id: id,
        event_id: sequence,
        event: 'identity.created',
        sequence,
        payload: '{}',
        status,
        attempts: 1,
        created_at: new Date(),
        last_attempt_at: new Date(),
        last_status_code: status === 'succeeded' ? 200 : 500,
      });
      await server.app.knex('webhook_delivery_attempts').insert({
        delivery_id: deliveryId,
        attempted_at: new Date(),
        status_code: status === 'succeeded' ? 200 : 500,
        duration_ms: 10,
        instance_id: 'oa',
      });
      return `${deliveries}/${deliveryId}/retry`;
    };
    const failed = await sent(1, 'failed');
    const succeeded = await sent(2, 'succeeded');
    await m('GET', '/webhooks/{id}/deliveries', { url: `${deliveries}?limit=1`, status: 200 });
    await m('GET', '/webhooks/{id}/deliveries', { url: `${deliveries}?offset=1`, status: 400 });
    const retry = '/webhooks/{id}/deliveries/{deliveryId}/retry';
    await m('POST', retry, { url: failed, status: 200 });
    await m('POST', retry, { url: succeeded, status: 409 });
    await m('DELETE', '/webhooks/{id}', { url: item, status: 200 });
  });

  test('stored audit events: a page newest first, following after a cursor, a refused offset', async () => {
    const m = (o: Omit<Call, 'token'>) => call('management', 'GET', '/audit-events', { token: admin, ...o });
    const page = await m({ url: '/audit-events?limit=2', status: 200 });
    const head = page.body.meta.pagination.headCursor as string;
    await m({ url: `/audit-events?after=${head}&filter=event%20%3D%20%22identity.created%22`, status: 200 });
    await m({ url: '/audit-events?offset=10', status: 400 });
  });

  test('management: the running version, for admins', async () => {
    await call('management', 'GET', '/version', { token: admin, status: 200 });
  });

  test('every documented operation had its success and at least one error validated', () => {
    for (const api of ['client', 'management'] as const) {
      expect({ [api]: validators[api].unexercised() }).toEqual({ [api]: [] });
    }
  });
});
