// RFC 8705 §3 binds tokens to the certificate of the connection that redeems them. In a device
// flow the person's browser presents the certificate at the login, and the device, which never
// presented it, polls the tokens: they must not be bound, or the device could not use them.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oc from 'openid-client';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { CLIENT, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import {
  certLoginToCallback,
  deviceClient as mtlsClient,
  enrolledDevice,
  exchange,
  type Device,
} from '../bound-tokens/bound-fixtures.js';
import { createPolicy } from '../second-factors/factor-fixtures.js';
import { confirmCode, cookieJar, deviceClient, headingOf, startDevice } from './device-fixtures.js';

describe('a device flow whose person signs in with a client certificate, under a policy that binds tokens', () => {
  let server: TestServer;
  let api: ManagementApi;
  let person: Device;
  const closers: (() => Promise<void>)[] = [];
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
    const policy = await createPolicy(api, 'device-cert-binds', {
      primary: { cert: { allowed: true, bindTokens: true } },
    });
    person = await enrolledDevice(server, api, 'device-cert-person', { type: 'User', authPolicyId: policy });
  });
  afterAll(async () => {
    await Promise.all(closers.map((c) => c()));
    await server.close();
  });

  const currentIdentity = (token: string) =>
    server.client.get(`${CLIENT}/current-identity`, { headers: { authorization: `Bearer ${token}` } });

  test('the policy binds the person’s own certificate login (the code flow)', async () => {
    const { config, close } = await mtlsClient(server, person);
    closers.push(close);
    const mtls = server.newClient({ cert: person.cert, key: person.key });
    const tokens = await exchange(config, await certLoginToCallback(server, config, mtls));

    expect(payloadOf(tokens.access_token).cnf).toEqual({ 'x5t#S256': person.thumbprint });
    expect((await currentIdentity(tokens.access_token)).status).toBe(401);
    await mtls.close();
  });

  test('the device polls without a certificate and gets unbound tokens that work on the Edge API', async () => {
    const device = await deviceClient(server);
    closers.push(device.close);
    const started = await startDevice(device.config);
    // The person's browser presents the certificate on every connection, the login's included.
    const phone = server.newClient({ cert: person.cert, key: person.key, localAddress: '127.0.0.2' });
    const browser = cookieJar(phone);

    const { login } = await confirmCode(browser, started.verification_uri_complete!);
    expect(login.status).toBe(303);
    const certPage = new URL(login.header('location')!, server.url);
    expect(certPage.pathname).toBe('/oidc/login/cert');
    const done = await browser.post(certPage.pathname, {
      form: { authRequestId: certPage.searchParams.get('authRequestID')! },
      headers: { accept: 'text/html' },
    });
    expect([done.status, headingOf(done.text)]).toEqual([200, 'Device signed in']);

    const tokens = await oc.pollDeviceAuthorizationGrant(device.config, started);
    const access = payloadOf(tokens.access_token);
    expect(access).toMatchObject({ sub: person.id, amr: ['cert'] });
    expect(access).not.toHaveProperty('cnf');
    const edge = await currentIdentity(tokens.access_token);
    expect(edge.status).toBe(200);
    expect(edge.body.data.id).toBe(person.id);
    await phone.close();
  });
});
