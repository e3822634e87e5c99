import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oc from 'openid-client';
import { expectError } from '../helpers/expect-error.js';
import {
  exchangeCode,
  followToCallback,
  passwordLogin as oidcPasswordLogin,
  refreshTokens,
  startAuthorization,
  submitLogin,
} from '../helpers/oidc-client.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  enrolledUpdbUser,
  managementApi,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import {
  certLoginToCallback,
  deviceClient,
  enrolledDevice,
  enrollOtt,
  exchange,
  oauthErrorOf,
  type Device,
} from './bound-fixtures.js';

const INVALID = 'Bearer realm="svc-oidc", error="invalid", error_description="token is invalid"';
const INVALID_TOKEN = 'Bearer realm="svc-oidc", error="invalid_token", error_description="token is invalid"';

describe('certificate-bound tokens (RFC 8705 §3) from certificate logins', () => {
  let server: TestServer;
  let api: ManagementApi;
  const closers: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  });
  afterAll(async () => {
    await Promise.all(closers.map((c) => c()));
    await server.close();
  });

  /** openid-client over a connection presenting `tls` (none: no certificate). */
  async function clientWith(tls: { cert?: string; key?: string } = {}) {
    const { config, close } = await deviceClient(server, tls);
    closers.push(close);
    return config;
  }

  /** The device's certificate login and code exchange, all over connections presenting its certificate. */
  async function boundLogin(device: Device, scope?: string) {
    const config = await clientWith(device);
    const mtls = server.newClient({ cert: device.cert, key: device.key });
    const tokens = await exchange(config, await certLoginToCallback(server, config, mtls, scope));
    return { config, mtls, tokens };
  }

  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
  const currentIdentity = (client = server.client, token: string) =>
    client.get(`${CLIENT}/current-identity`, bearer(token));

  test('discovery says tls_client_certificate_bound_access_tokens', async () => {
    const config = await clientWith();
    expect(config.serverMetadata().tls_client_certificate_bound_access_tokens).toBe(true);
  });

  test('a certificate login yields an access token with cnf x5t#S256 of the leaf, usable only with that certificate', async () => {
    const device = await enrolledDevice(server, api, 'bound-device');
    const other = await enrolledDevice(server, api, 'bound-other-device');
    const { config, mtls, tokens } = await boundLogin(device);

    expect(payloadOf(tokens.access_token)).toMatchObject({
      sub: device.id,
      amr: ['cert'],
      cnf: { 'x5t#S256': device.thumbprint },
    });
    // Over the device's own connection: the Edge APIs (openid-client's fetch and ours) and userinfo.
    const me = await oc.fetchProtectedResource(
      config,
      tokens.access_token,
      new URL(`${server.url}${CLIENT}/current-identity`),
      'GET',
    );
    expect(((await me.json()) as any).data.id).toBe(device.id);
    expect((await currentIdentity(mtls, tokens.access_token)).status).toBe(200);
    expect((await oc.fetchUserInfo(config, tokens.access_token, device.id)).sub).toBe(device.id);

    // Copied off the device: no certificate, or another enrolled device's certificate.
    const elsewhere = [server.client, server.newClient({ cert: other.cert, key: other.key })];
    for (const client of elsewhere) {
      expectError(await currentIdentity(client, tokens.access_token), {
        status: 401,
        code: 'UNAUTHORIZED',
        challenge: INVALID,
      });
      const info = await client.get('/oidc/userinfo', bearer(tokens.access_token));
      expect([info.status, info.header('www-authenticate'), info.body.error]).toEqual([
        401,
        INVALID_TOKEN,
        'invalid_token',
      ]);
    }
    // The same connection again after the refusals: the comparison is per request, nothing was kept.
    expect((await currentIdentity(mtls, tokens.access_token)).status).toBe(200);
  });

  test('a refresh needs the certificate; a refused one leaves the refresh token usable, and the new tokens carry the same cnf', async () => {
    const device = await enrolledDevice(server, api, 'bound-refresher');
    const other = await enrolledDevice(server, api, 'bound-refresher-other');
    const { config, tokens } = await boundLogin(device);
    const refreshToken = tokens.refresh_token!;

    const without = await refreshTokens(server.client, refreshToken);
    const withOther = await refreshTokens(
      server.newClient({ cert: other.cert, key: other.key }),
      refreshToken,
    );
    const viaOpenidClient = await oauthErrorOf(oc.refreshTokenGrant(await clientWith(), refreshToken));

    for (const refused of [without, withOther]) {
      expect([refused.status, refused.body.error]).toEqual([400, 'invalid_grant']);
    }
    expect(viaOpenidClient).toEqual({ error: 'invalid_grant', status: 400 });
    // Not rotated by the refusals: the same refresh token works over the device's connection.
    const refreshed = await oc.refreshTokenGrant(config, refreshToken);
    expect(refreshed.refresh_token).not.toBe(refreshToken);
    expect(payloadOf(refreshed.access_token).cnf).toEqual({ 'x5t#S256': device.thumbprint });
    expect((await oc.refreshTokenGrant(config, refreshed.refresh_token!)).access_token).toBeTruthy();
  });

  test('the code exchange needs the certificate of the login', async () => {
    const device = await enrolledDevice(server, api, 'bound-code');
    const config = await clientWith(device);
    const mtls = server.newClient({ cert: device.cert, key: device.key });
    const done = await certLoginToCallback(server, config, mtls);

    const refused = await oauthErrorOf(exchange(await clientWith(), done));

    expect(refused).toEqual({ error: 'invalid_grant', status: 400 });
  });

  test('introspection: the caller uses its own bound token only with its certificate, and sees the cnf of bound tokens', async () => {
    const resourceServer = await enrolledDevice(server, api, 'bound-introspector', {
      permissions: ['token-introspection'],
    });
    const device = await enrolledDevice(server, api, 'bound-introspected');
    const caller = (await boundLogin(resourceServer)).tokens.access_token;
    const subject = (await boundLogin(device)).tokens;
    const introspect = (client = server.client, token = subject.access_token) =>
      client.post('/oidc/token/introspection', { form: { token }, ...bearer(caller) });

    const without = await introspect();
    const own = await introspect(server.newClient({ cert: resourceServer.cert, key: resourceServer.key }));
    const ofRefresh = await introspect(
      server.newClient({ cert: resourceServer.cert, key: resourceServer.key }),
      subject.refresh_token!,
    );

    expect([without.status, without.header('www-authenticate'), without.body.error]).toEqual([
      401,
      INVALID_TOKEN,
      'invalid_token',
    ]);
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ active: true, sub: device.id, cnf: { 'x5t#S256': device.thumbprint } });
    expect(ofRefresh.body).toMatchObject({ active: true, cnf: { 'x5t#S256': device.thumbprint } });
  });

  test('a device that re-enrolls gets a new certificate: its old tokens are refused, a new login binds to the new one', async () => {
    const device = await enrolledDevice(server, api, 'bound-reenrolled');
    const old = await boundLogin(device);
    // Re-enrollment: the old certificate authenticator goes, a new OTT enrollment gives a new certificate.
    const authenticators = await api.get(
      `/authenticators?filter=${encodeURIComponent(`identityId = "${device.id}"`)}`,
    );
    for (const a of authenticators.body.data)
      expect((await api.delete(`/authenticators/${a.id}`)).status).toBe(200);
    expect((await api.post('/enrollments', { body: { method: 'ott', identityId: device.id } })).status).toBe(
      201,
    );
    const renewed: Device = {
      id: device.id,
      ...(await enrollOtt(server, api, device.id, 'bound-reenrolled')),
    };
    const newConnection = server.newClient({ cert: renewed.cert, key: renewed.key });

    const call = await currentIdentity(newConnection, old.tokens.access_token);
    const refresh = await refreshTokens(newConnection, old.tokens.refresh_token!);
    const fresh = await boundLogin(renewed);

    expect(renewed.thumbprint).not.toBe(device.thumbprint);
    expectError(call, { status: 401, code: 'UNAUTHORIZED', challenge: INVALID });
    expect([refresh.status, refresh.body.error]).toEqual([400, 'invalid_grant']);
    expect(payloadOf(fresh.tokens.access_token).cnf).toEqual({ 'x5t#S256': renewed.thumbprint });
    expect((await currentIdentity(newConnection, fresh.tokens.access_token)).status).toBe(200);
  });

  test('other login methods, and legacy svc-session tokens of a certificate login, stay unbound', async () => {
    const user = await enrolledUpdbUser(server, api, 'bound-password-user');
    const device = await enrolledDevice(server, api, 'bound-legacy-device');

    const { tokens } = await oidcPasswordLogin(server.client, user.username, user.password);
    const legacy = await server
      .newClient({ cert: device.cert, key: device.key })
      .post(`${CLIENT}/authenticate?method=cert`);

    expect(payloadOf(tokens.access_token).cnf).toBeUndefined();
    expect((await currentIdentity(server.client, tokens.access_token)).status).toBe(200);
    expect(legacy.status).toBe(200);
    const session = await server.client.get(`${CLIENT}/current-identity`, {
      headers: { 'svc-session': legacy.body.data.token },
    });
    expect(session.status).toBe(200);
  });

  test('primary.cert.bindTokens: new policies bind, a policy set to false issues unbound tokens, and tokens issued unbound stay unbound', async () => {
    const created = await api.post('/auth-policies', { body: { name: 'binds-by-default' } });
    const defaults = await api.get('/auth-policies/default');
    expect((await api.get(`/auth-policies/${created.body.data.id}`)).body.data.primary.cert.bindTokens).toBe(
      true,
    );
    expect(defaults.body.data.primary.cert.bindTokens).toBe(true);
    const unbound = await api.post('/auth-policies', {
      body: { name: 'unbound-certs', primary: { cert: { bindTokens: false } } },
    });
    const policyId = unbound.body.data.id as string;
    const device = await enrolledDevice(server, api, 'unbound-device', { authPolicyId: policyId });

    const { tokens } = await boundLogin(device);
    expect(payloadOf(tokens.access_token).cnf).toBeUndefined();
    expect((await currentIdentity(server.client, tokens.access_token)).status).toBe(200);
    // Binding turned on afterwards binds the next login, not the tokens already issued.
    expect(
      (await api.patch(`/auth-policies/${policyId}`, { body: { primary: { cert: { bindTokens: true } } } }))
        .status,
    ).toBe(200);
    const refreshed = await refreshTokens(server.client, tokens.refresh_token!);
    const next = await boundLogin(device);

    expect(refreshed.status).toBe(200);
    expect(payloadOf(refreshed.body.access_token).cnf).toBeUndefined();
    expect(payloadOf(next.tokens.access_token).cnf).toEqual({ 'x5t#S256': device.thumbprint });
  });

  test('a certificate login that finishes with TOTP over another connection is bound to the certificate of its primary step', async () => {
    const device = await enrolledDevice(server, api, 'bound-totp-device');
    const mtls = server.newClient({ cert: device.cert, key: device.key });
    // TOTP enrolled through a legacy session of the certificate, then a policy that requires it.
    const session = await mtls.post(`${CLIENT}/authenticate?method=cert`);
    const headers = { 'svc-session': session.body.data.token as string };
    const mfa = await server.client.post(`${CLIENT}/current-identity/mfa`, { headers });
    const step = timeStepAt();
    const url = mfa.body.data.provisioningUrl as string;
    const verified = await server.client.post(`${CLIENT}/current-identity/mfa/verify`, {
      headers,
      body: { code: await totpCode(url, step) },
    });
    expect(verified.status).toBe(200);
    const policy = await api.post('/auth-policies', {
      body: { name: 'cert-then-totp', secondary: { requireTotp: true } },
    });
    expect(
      (await api.patch(`/identities/${device.id}`, { body: { authPolicyId: policy.body.data.id } })).status,
    ).toBe(200);

    const started = await startAuthorization(mtls, { method: 'cert' });
    const owes = await submitLogin(mtls, started, { body: {} });
    // The second step from a connection without any certificate (a browser, say).
    const totp = await server.client.post('/oidc/login/totp', {
      body: { id: started.authRequestId, code: await totpCode(url, step + 1) },
    });
    const callback = await followToCallback(server.client, totp);
    const exchanged = await exchangeCode(mtls, { code: callback.code, verifier: started.pkce.verifier });

    expect(owes.status).toBe(200);
    expect(exchanged.status).toBe(200);
    expect(payloadOf(exchanged.body.access_token)).toMatchObject({
      amr: expect.arrayContaining(['cert', 'mfa']),
      cnf: { 'x5t#S256': device.thumbprint },
    });
    expect((await currentIdentity(server.client, exchanged.body.access_token)).status).toBe(401);
  });
});
