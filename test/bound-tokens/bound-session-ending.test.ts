import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oc from 'openid-client';
import { pino } from 'pino';
import { expectError } from '../helpers/expect-error.js';
import { refreshTokens, startAuthorization, submitLogin } from '../helpers/oidc-client.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { CLIENT, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import {
  certLoginToCallback,
  deviceClient,
  enrolledDevice,
  exchange,
  type Device,
} from './bound-fixtures.js';

const INVALID = 'Bearer realm="svc-oidc", error="invalid", error_description="token is invalid"';

/**
 * What ends a device's certificate-bound tokens, and what must not: deleting its certificate
 * authenticator ends them even over the old certificate's connection; a copy of one of its tokens
 * cannot end them through `/oidc/revoke`.
 */
describe('ending certificate-bound sessions', () => {
  const raw: string[] = [];
  const auditEvents = (): Record<string, any>[] =>
    raw
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, any>)
      .filter((l) => l.audit === true);
  let server: TestServer;
  let api: ManagementApi;
  const closers: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (chunk: string) => void raw.push(chunk) });
    server = await startTestServer({ logger });
    api = managementApi(server, await server.adminToken());
  });
  afterAll(async () => {
    await Promise.all(closers.map((c) => c()));
    await server.close();
  });

  /** The device's certificate login and code exchange, over connections presenting its certificate. */
  async function boundLogin(device: Device) {
    const { config, close } = await deviceClient(server, device);
    closers.push(close);
    const mtls = server.newClient({ cert: device.cert, key: device.key });
    const tokens = await exchange(config, await certLoginToCallback(server, config, mtls));
    return { config, mtls, tokens };
  }

  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
  const currentIdentity = (client: TestServer['client'], token: string) =>
    client.get(`${CLIENT}/current-identity`, bearer(token));
  const revoke = (client: TestServer['client'], token: string, hint: string) =>
    client.post('/oidc/revoke', { form: { token, token_type_hint: hint, client_id: 'svc' } });

  async function certAuthenticatorOf(identityId: string): Promise<string> {
    const list = await api.get(
      `/authenticators?filter=${encodeURIComponent(`identityId = "${identityId}"`)}`,
    );
    const cert = (list.body.data as { id: string; method: string }[]).filter((a) => a.method === 'cert');
    expect(cert).toHaveLength(1);
    return cert[0]!.id;
  }

  test('deleting the certificate authenticator ends the sessions bound to it, also over a connection presenting the old certificate', async () => {
    const device = await enrolledDevice(server, api, 'deleted-cert-device');
    const bystander = await enrolledDevice(server, api, 'deleted-cert-bystander');
    const first = await boundLogin(device);
    const second = await boundLogin(device);
    const kept = await boundLogin(bystander);
    const authenticatorId = await certAuthenticatorOf(device.id);

    expect((await api.delete(`/authenticators/${authenticatorId}`)).status).toBe(200);

    // The old certificate still completes the TLS handshake; its tokens are refused all the same.
    for (const { mtls, tokens } of [first, second]) {
      expectError(await currentIdentity(mtls, tokens.access_token), {
        status: 401,
        code: 'UNAUTHORIZED',
        challenge: INVALID,
      });
      const refresh = await refreshTokens(mtls, tokens.refresh_token!);
      expect([refresh.status, refresh.body.error]).toEqual([400, 'invalid_grant']);
    }
    // Another device's bound session is not touched.
    expect((await currentIdentity(kept.mtls, kept.tokens.access_token)).status).toBe(200);
    expect((await oc.refreshTokenGrant(kept.config, kept.tokens.refresh_token!)).access_token).toBeTruthy();
    const ended = auditEvents().filter((e) => e.event === 'session.ended' && e.identityId === device.id);
    expect(ended.map((e) => [e.sessionId, e.kind, e.cause]).sort()).toEqual(
      [first, second]
        .map(({ tokens }) => [(tokens.claims() as { z_asid?: string }).z_asid, 'oidc', 'certificate-deleted'])
        .sort(),
    );
  });

  test('a certificate login still owing its TOTP step when the certificate authenticator is deleted cannot finish', async () => {
    const device = await enrolledDevice(server, api, 'deleted-cert-mid-login');
    const mtls = server.newClient({ cert: device.cert, key: device.key });
    // TOTP enrolled through a legacy session of the certificate, then a policy that requires it.
    const session = await mtls.post(`${CLIENT}/authenticate?method=cert`);
    const headers = { 'svc-session': session.body.data.token as string };
    const mfa = await server.client.post(`${CLIENT}/current-identity/mfa`, { headers });
    const step = timeStepAt();
    const url = mfa.body.data.provisioningUrl as string;
    const verify = { headers, body: { code: await totpCode(url, step) } };
    expect((await server.client.post(`${CLIENT}/current-identity/mfa/verify`, verify)).status).toBe(200);
    const policy = await api.post('/auth-policies', {
      body: { name: 'mid-login-totp', secondary: { requireTotp: true } },
    });
    const moved = await api.patch(`/identities/${device.id}`, {
      body: { authPolicyId: policy.body.data.id },
    });
    expect(moved.status).toBe(200);
    const started = await startAuthorization(mtls, { method: 'cert' });
    expect((await submitLogin(mtls, started, { body: {} })).status).toBe(200);

    expect((await api.delete(`/authenticators/${await certAuthenticatorOf(device.id)}`)).status).toBe(200);
    const totp = await mtls.post('/oidc/login/totp', {
      body: { id: started.authRequestId, code: await totpCode(url, step + 1) },
    });

    expect(totp.status).toBeGreaterThanOrEqual(400);
    expect(totp.status).toBeLessThan(500);
    expect(totp.header('location')).toBeUndefined();
  });

  test('a copied bound access token revokes nothing over a connection without its certificate; over the device connection it ends the session', async () => {
    const device = await enrolledDevice(server, api, 'revoke-copied-access');
    const { config, mtls, tokens } = await boundLogin(device);

    const copied = await revoke(server.client, tokens.access_token, 'access_token');

    expect([copied.status, copied.text]).toEqual([200, '']);
    expect((await currentIdentity(mtls, tokens.access_token)).status).toBe(200);
    const refreshed = await oc.refreshTokenGrant(config, tokens.refresh_token!);
    expect((await currentIdentity(mtls, refreshed.access_token)).status).toBe(200);

    const own = await revoke(mtls, refreshed.access_token, 'access_token');

    expect(own.status).toBe(200);
    expect((await currentIdentity(mtls, refreshed.access_token)).status).toBe(401);
  });

  test('a copied refresh token of a bound grant revokes nothing over a connection without its certificate; over the device connection it ends the grant', async () => {
    const device = await enrolledDevice(server, api, 'revoke-copied-refresh');
    const other = await enrolledDevice(server, api, 'revoke-copied-refresh-other');
    const { mtls, tokens } = await boundLogin(device);

    const copied = await revoke(server.client, tokens.refresh_token!, 'refresh_token');
    const otherCert = await revoke(
      server.newClient({ cert: other.cert, key: other.key }),
      tokens.refresh_token!,
      'refresh_token',
    );

    for (const refused of [copied, otherCert]) expect([refused.status, refused.text]).toEqual([200, '']);
    expect((await currentIdentity(mtls, tokens.access_token)).status).toBe(200);
    const refreshed = await refreshTokens(mtls, tokens.refresh_token!);
    expect(refreshed.status).toBe(200);

    const own = await revoke(mtls, refreshed.body.refresh_token, 'refresh_token');

    expect(own.status).toBe(200);
    const after = await refreshTokens(mtls, refreshed.body.refresh_token);
    expect([after.status, after.body.error]).toEqual([400, 'invalid_grant']);
    expect((await currentIdentity(mtls, refreshed.body.access_token)).status).toBe(401);
  });

  test('a PUT of an auth policy that does not name bindTokens turns binding on; naming it false keeps it off', async () => {
    const created = await api.post('/auth-policies', {
      body: { name: 'put-bind-tokens', primary: { cert: { bindTokens: false } } },
    });
    const id = created.body.data.id as string;
    const bindTokens = async () => (await api.get(`/auth-policies/${id}`)).body.data.primary.cert.bindTokens;
    expect(await bindTokens()).toBe(false);

    const keptOff = await api.put(`/auth-policies/${id}`, {
      body: { name: 'put-bind-tokens', primary: { cert: { bindTokens: false } } },
    });
    expect([keptOff.status, await bindTokens()]).toEqual([200, false]);
    const omitted = await api.put(`/auth-policies/${id}`, { body: { name: 'put-bind-tokens' } });
    expect([omitted.status, await bindTokens()]).toEqual([200, true]);
  });
});
