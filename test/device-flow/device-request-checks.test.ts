import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  cookieJar,
  deviceClient,
  deviceRow,
  expireDeviceCode,
  headingOf,
  personSignsIn,
  pollOnce,
  startDevice,
} from './device-fixtures.js';

const admin = { username: ADMIN_USERNAME, password: ADMIN_PASSWORD };

describe('device authorization grant: what the device sends is checked', () => {
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

  const authorize = (body: string) =>
    server.client.post('/oidc/device/auth', {
      body,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
  const form = (params: Record<string, string | string[]>) => {
    const body = new URLSearchParams();
    for (const [name, values] of Object.entries(params))
      for (const v of [values].flat()) body.append(name, v);
    return body.toString();
  };

  test.each([
    ['NUL in configTypes', { configTypes: ['a\u0000b'] }],
    ['a control character in the second configTypes', { configTypes: ['ok', 'x\u0007'] }],
    ['ESC in scope', { scope: 'openid\u001b' }],
    ['a control character in another parameter', { claims_locales: 'en\u0001' }],
    ['a control character in a parameter name', { 'x\u0002': 'y' }],
  ])('%s: 400 invalid_request, no device code', async (_what, params) => {
    const res = await authorize(form({ client_id: 'svc', scope: 'openid', ...params }));

    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.device_code).toBeUndefined();
  });

  test('a lone surrogate (as UTF-8 bytes) cannot reach the database as one: the flow still ends with tokens', async () => {
    // %ED%A0%80 is U+D800 encoded as UTF-8, which decoding turns into replacement characters.
    const res = await authorize(`client_id=svc&scope=openid&configTypes=a%ED%A0%80b`);
    expect(res.status).toBe(200);

    const done = await personSignsIn(cookieJar(server.client), res.body.verification_uri_complete, admin);
    const tokens = await pollOnce(server.client, res.body.device_code);

    expect(headingOf(done.text)).toBe('Device signed in');
    expect(tokens.status).toBe(200);
  });

  test('a device code is redeemed only at its own issuer: elsewhere invalid_grant, its poll state untouched, and its own issuer still answers', async () => {
    const localhost = server.url.replace('127.0.0.1', 'localhost');
    const local = await deviceClient(server, 'localhost');
    const atLocalhost = server.newClient({}, localhost);
    try {
      const pending = await startDevice(local.config);
      const confirmed = await startDevice(local.config);
      await personSignsIn(cookieJar(atLocalhost), confirmed.verification_uri_complete!, admin);

      const pendingElsewhere = await pollOnce(server.client, pending.device_code);
      const confirmedElsewhere = await pollOnce(server.client, confirmed.device_code);
      const rowAfter = await deviceRow(server, confirmed.user_code);
      const atHome = await pollOnce(atLocalhost, confirmed.device_code);

      expect(pendingElsewhere.status).toBe(400);
      expect(pendingElsewhere.body.error).toBe('invalid_grant');
      expect(confirmedElsewhere.status).toBe(400);
      expect(confirmedElsewhere.body.error).toBe('invalid_grant');
      expect(rowAfter.polled_at).toBeNull();
      expect(rowAfter.consumed_at).toBeNull();
      expect(atHome.status).toBe(200);
      expect(atHome.body.access_token).toBeDefined();
    } finally {
      await local.close();
    }
  });

  test('an expired code that is still pending, polled too early, answers expired_token (not slow_down)', async () => {
    const started = await startDevice(device.config);
    const first = await pollOnce(server.client, started.device_code);
    await expireDeviceCode(server, started.user_code, 10);

    const tooEarly = await pollOnce(server.client, started.device_code);

    expect(first.body.error).toBe('authorization_pending');
    expect(tooEarly.status).toBe(400);
    expect(tooEarly.body.error).toBe('expired_token');
  });
});
