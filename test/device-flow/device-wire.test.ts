import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import * as oc from 'openid-client';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { issuerOf, payloadOf } from '../oidc/oidc-fixtures.js';
import {
  confirmCode,
  cookieJar,
  deviceClient,
  headingOf,
  inputValue,
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

  test('the link’s page is the same for a code that exists and one that does not: the code is looked up only when posted', async () => {
    const started = await startDevice(device.config);
    const unknown = started.user_code === 'BCDF-GHJK' ? 'BCDF-GHJL' : 'BCDF-GHJK';
    const page = async (code: string) => {
      const res = await server.client.get(`/oidc/device?user_code=${encodeURIComponent(code)}`);
      return { status: res.status, text: res.text.replace(/value="[^"]*"/g, 'value=""') };
    };

    const [real, made] = [await page(started.user_code), await page(unknown)];

    expect(real.status).toBe(200);
    expect(made).toEqual(real);
    expect(real.text).not.toContain('name="confirm"');
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
    // verification_uri_complete: the code form, prefilled; its post looks the code up and shows
    // the confirmation a typed code gets: the code, the device's address, that it stays signed in.
    const { linked, confirmed, login } = await confirmCode(browser, started.verification_uri_complete!);
    expect(headingOf(linked.text)).toBe('Sign in on a device');
    expect(inputValue(linked.text, 'user_code')).toBe(started.user_code);
    expect(linked.text).not.toContain('name="confirm"');
    expect(confirmed.text).not.toContain('<script');
    expect(confirmed.header('content-security-policy')).toContain("default-src 'none'");
    expect(headingOf(confirmed.text)).toBe(`Sign in on the device showing ${started.user_code}?`);
    expect(confirmed.text).toContain('name="abort"');
    expect(confirmed.text).toContain('The request came from the address <code>127.0.0.1</code>.');
    expect(confirmed.text).toContain('The device stays signed in');
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
