import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oc from 'openid-client';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { issuerOf, payloadOf } from '../oidc/oidc-fixtures.js';
import {
  confirmCode,
  cookieJar,
  deviceClient,
  headingOf,
  DEVICE_GRANT,
  startDevice,
} from './device-fixtures.js';

describe('device authorization grant: the wire end to end', () => {
  let server: TestServer;
  let device: Awaited<ReturnType<typeof deviceClient>>;
  beforeAll(async () => {
    server = await startTestServer();
    device = await deviceClient(server);
  });
  afterAll(async () => {
    await device.close();
    await server.close();
  });

  test('discovery lists the device authorization endpoint and the grant type', async () => {
    const res = await server.client.get('/oidc/.well-known/openid-configuration');

    expect(res.body.device_authorization_endpoint).toBe(`${issuerOf(server)}/device/auth`);
    expect(res.body.grant_types_supported).toContain(DEVICE_GRANT);
  });

  test('a person confirms on our pages and signs in; the device polls a token set with the z_* claims', async () => {
    const started = await startDevice(device.config);

    expect(started.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(started.verification_uri).toBe(`${issuerOf(server)}/device`);
    expect(started.verification_uri_complete).toBe(
      `${issuerOf(server)}/device?user_code=${encodeURIComponent(started.user_code)}`,
    );
    expect(started.expires_in).toBe(600);
    expect(started.interval).toBe(5);

    // The person's phone is another host than the device.
    const phone = server.newClient({ localAddress: '127.0.0.2' });
    const browser = cookieJar(phone);
    // verification_uri_complete: one page names the code and offers confirm and decline.
    const { confirmed, login } = await confirmCode(browser, started.verification_uri_complete!);
    expect(confirmed.text).not.toContain('<script');
    expect(confirmed.header('content-security-policy')).toContain("default-src 'none'");
    expect(headingOf(confirmed.text)).toBe(`Sign in on the device showing ${started.user_code}?`);
    expect(confirmed.text).toContain('name="abort"');
    expect(login.status).toBe(303);
    const loginPage = new URL(login.header('location')!, server.url);
    expect(loginPage.pathname).toBe('/oidc/login/username');

    const done = await browser.post(loginPage.pathname + loginPage.search, {
      form: {
        authRequestId: loginPage.searchParams.get('authRequestID')!,
        username: ADMIN_USERNAME,
        password: ADMIN_PASSWORD,
      },
    });
    expect(done.status).toBe(200);
    expect(headingOf(done.text)).toBe('Device signed in');

    const tokens = await oc.pollDeviceAuthorizationGrant(device.config, started);
    const access = payloadOf(tokens.access_token);
    expect(access).toMatchObject({ z_t: 'a', z_ia: true, amr: ['pwd'] });
    expect(typeof access.z_asid).toBe('string');
    expect(tokens.refresh_token).toBeDefined();
    expect(tokens.claims()).toMatchObject({ z_asid: access.z_asid, amr: ['pwd'] });

    const sessions = await server.client.get('/edge/client/v1/current-identity/api-sessions', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(sessions.status).toBe(200);
    const mine = sessions.body.data.find((s: { id: string }) => s.id === access.z_asid);
    expect(mine).toMatchObject({ kind: 'oidc', authMethod: 'password', ipAddress: '127.0.0.1' });
    await phone.close();
  });
});
