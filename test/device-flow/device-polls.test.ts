import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { capturedAuditLog } from '../helpers/audit-log.js';
import { refreshTokens } from '../helpers/oidc-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { waitFor } from '../helpers/wait-for.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import {
  agePoll,
  confirmCode,
  cookieJar,
  deviceClient,
  deviceRow,
  DEVICE_GRANT,
  expireDeviceCode,
  headingOf,
  inputValue,
  personSignsIn,
  pollOnce,
  startDevice,
} from './device-fixtures.js';

const admin = { username: ADMIN_USERNAME, password: ADMIN_PASSWORD };

describe('device authorization grant: polls, refusals and the person’s pages', () => {
  let server: TestServer;
  let device: Awaited<ReturnType<typeof deviceClient>>;
  const audit = capturedAuditLog();
  beforeAll(async () => {
    server = await startTestServer({ logger: audit.logger });
    device = await deviceClient(server);
  });
  afterAll(async () => {
    await device.close();
    await server.close();
  });

  const edgeCall = (accessToken: string) =>
    server.client.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${accessToken}` },
    });

  /** A device code the admin has confirmed and signed in for. */
  async function confirmedDevice(scope?: string, extra?: Record<string, string | string[]>) {
    const started = await startDevice(device.config, scope, extra);
    const done = await personSignsIn(cookieJar(server.client), started.verification_uri_complete!, admin);
    expect(headingOf(done.text)).toBe('Device signed in');
    return started;
  }

  test('authorization_pending until the person confirms; polls faster than the interval get slow_down, +5 s each time, the state kept in the database', async () => {
    const started = await startDevice(device.config);

    const first = await pollOnce(server.client, started.device_code);
    const second = await pollOnce(server.client, started.device_code);

    expect(first.status).toBe(400);
    expect(first.body.error).toBe('authorization_pending');
    expect(second.status).toBe(400);
    expect(second.body.error).toBe('slow_down');
    expect((await deviceRow(server, started.user_code)).poll_interval).toBe(10);

    // 8.5 s after the last poll: under the new 10 s interval by more than the 1 s of jitter.
    await agePoll(server, started.user_code, 8.5);
    const third = await pollOnce(server.client, started.device_code);
    expect(third.body.error).toBe('slow_down');
    expect((await deviceRow(server, started.user_code)).poll_interval).toBe(15);

    // 14.2 s after the last poll: within the jitter of the 15 s interval.
    await agePoll(server, started.user_code, 14.2);
    const fourth = await pollOnce(server.client, started.device_code);
    expect(fourth.body.error).toBe('authorization_pending');
    expect((await deviceRow(server, started.user_code)).poll_interval).toBe(15);
  });

  test('the person declines: the result page says so, and the device gets access_denied', async () => {
    const started = await startDevice(device.config);
    const browser = cookieJar(server.client);
    const confirm = await browser.get(started.verification_uri_complete!);

    const declined = await browser.post('/oidc/device', {
      form: { xsrf: inputValue(confirm.text, 'xsrf')!, user_code: started.user_code, abort: 'yes' },
    });
    const poll = await pollOnce(server.client, started.device_code);

    expect(declined.status).toBe(200);
    expect(headingOf(declined.text)).toBe('Sign-in declined');
    expect(poll.status).toBe(400);
    expect(poll.body.error).toBe('access_denied');
    expect(audit.events().some((e) => e.event === 'oidc.device.declined')).toBe(true);
  });

  test('an expired device code answers expired_token until the janitor’s grace has passed, then invalid_grant', async () => {
    const started = await startDevice(device.config);
    await expireDeviceCode(server, started.user_code, 10);

    const expired = await pollOnce(server.client, started.device_code);
    const entered = await confirmCode(cookieJar(server.client), started.verification_uri_complete!);
    await expireDeviceCode(server, started.user_code, 5 * 60 + 10);
    const gone = await pollOnce(server.client, started.device_code);

    expect(expired.status).toBe(400);
    expect(expired.body.error).toBe('expired_token');
    expect(entered.login.status).toBe(400);
    expect(entered.login.text).toContain('That code has expired');
    expect(gone.status).toBe(400);
    expect(gone.body.error).toBe('invalid_grant');
    expect(audit.events().some((e) => e.event === 'oidc.device.expired')).toBe(true);
  });

  test('an unknown device code is invalid_grant, and a user code is no device code', async () => {
    const started = await startDevice(device.config);

    const unknown = await pollOnce(server.client, 'not-a-device-code');
    const byUserCode = await pollOnce(server.client, `user-code:${started.user_code.replace('-', '')}`);

    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe('invalid_grant');
    expect(byUserCode.status).toBe(400);
    expect(byUserCode.body.error).toBe('invalid_grant');
  });

  test('a used device code is invalid_grant, and its reuse revokes the tokens it issued (as a code replay does)', async () => {
    const started = await confirmedDevice();
    const issued = await pollOnce(server.client, started.device_code);
    expect(issued.status).toBe(200);
    expect((await edgeCall(issued.body.access_token)).status).toBe(200);

    const replay = await pollOnce(server.client, started.device_code);

    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    await waitFor(async () => (await edgeCall(issued.body.access_token)).status === 401, {
      what: 'the access token refused after the replay',
    });
    const refreshed = await refreshTokens(server.client, issued.body.refresh_token);
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error).toBe('invalid_grant');
  });

  test('the session is listed and revocable like any other: an admin ends it, and the device’s tokens stop working', async () => {
    const started = await confirmedDevice();
    const issued = await pollOnce(server.client, started.device_code);
    const asid = payloadOf(issued.body.access_token).z_asid as string;
    const adminHeaders = { 'svc-session': await server.adminToken() };
    const listed = await server.client.get(`/edge/management/v1/api-sessions/${asid}`, {
      headers: adminHeaders,
    });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toMatchObject({ kind: 'oidc', authMethod: 'password' });

    const ended = await server.client.delete(`/edge/management/v1/api-sessions/${asid}`, {
      headers: adminHeaders,
    });

    expect(ended.status).toBeLessThan(300);
    await waitFor(async () => (await edgeCall(issued.body.access_token)).status === 401, {
      what: 'the access token refused after the session ended',
    });
    expect((await refreshTokens(server.client, issued.body.refresh_token)).body.error).toBe('invalid_grant');
  });

  test('the person may type the code at another issuer’s host: the device’s tokens and refreshes stay with its own issuer', async () => {
    const localhost = server.url.replace('127.0.0.1', 'localhost');
    const local = await deviceClient(server, 'localhost');
    const atLocalhost = server.newClient({}, localhost);
    try {
      const started = await startDevice(local.config);
      expect(started.verification_uri).toBe(`${localhost}/oidc/device`);
      const viaIp = started.verification_uri_complete!.replace(localhost, server.url);

      const done = await personSignsIn(cookieJar(server.client), viaIp, admin);
      const issued = await pollOnce(atLocalhost, started.device_code);
      const refreshed = await refreshTokens(atLocalhost, issued.body.refresh_token);

      expect(headingOf(done.text)).toBe('Device signed in');
      expect(payloadOf(issued.body.access_token).iss).toBe(`${localhost}/oidc`);
      expect(refreshed.status).toBe(200);
    } finally {
      await local.close();
    }
  });

  test('parallel polls of one confirmed device code give exactly one token set', async () => {
    const started = await confirmedDevice();

    const polls = await Promise.all(
      Array.from({ length: 8 }, () => pollOnce(server.client, started.device_code)),
    );

    const won = polls.filter((p) => p.status === 200);
    expect(won).toHaveLength(1);
    for (const lost of polls.filter((p) => p.status !== 200)) {
      expect(lost.status).toBe(400);
      expect(lost.body.error).toBe('invalid_grant');
    }
  });

  test('the code form takes the code in any case, with or without the dash, and names it as the device shows it', async () => {
    const started = await startDevice(device.config);
    const browser = cookieJar(server.client);
    const form = await browser.get('/oidc/device');
    expect(inputValue(form.text, 'user_code')).toBeUndefined();
    expect(form.text).toContain('autocomplete="off"');

    const confirm = await browser.post('/oidc/device', {
      form: {
        xsrf: inputValue(form.text, 'xsrf')!,
        user_code: started.user_code.replace('-', '').toLowerCase(),
      },
    });

    expect(confirm.status).toBe(200);
    expect(headingOf(confirm.text)).toBe(`Sign in on the device showing ${started.user_code}?`);
    expect(confirm.text).toContain('name="confirm"');
    expect(confirm.text).toContain('name="abort"');
    expect(confirm.text).not.toContain('<script');
  });

  test('a form without its XSRF secret is refused and shown again, on our page', async () => {
    const started = await startDevice(device.config);
    const browser = cookieJar(server.client);
    await browser.get('/oidc/device');

    const res = await browser.post('/oidc/device', {
      form: { xsrf: 'forged', user_code: started.user_code },
    });

    expect(res.status).toBe(400);
    expect(res.header('content-security-policy')).toContain("default-src 'none'");
    expect(res.text).toContain('This form has expired');
    expect((await pollOnce(server.client, started.device_code)).body.error).toBe('authorization_pending');
  });

  test('a post without the form’s session is shown the form again, and the form then works', async () => {
    const started = await startDevice(device.config);
    const browser = cookieJar(server.client);

    const lost = await browser.post('/oidc/device', { form: { xsrf: 'none', user_code: started.user_code } });
    const again = await browser.post('/oidc/device', {
      form: { xsrf: inputValue(lost.text, 'xsrf')!, user_code: started.user_code },
    });

    expect(lost.status).toBe(400);
    expect(lost.text).toContain('This form has expired');
    expect(again.status).toBe(200);
    expect(headingOf(again.text)).toBe(`Sign in on the device showing ${started.user_code}?`);
  });

  test('the code form’s session cookie lives as long as a device code, not as a login session, and is sent to the form only', async () => {
    const res = await server.client.get('/oidc/device');
    const cookie = res.headerAll('set-cookie').find((c) => c.startsWith('_session='))!;
    const expires = new Date(/expires=([^;]+)/.exec(cookie)![1]!).getTime();

    expect(expires - Date.now()).toBeLessThanOrEqual(600_000);
    expect(cookie).toMatch(/httponly/i);
    expect(cookie).toMatch(/secure/i);
    expect(cookie).toMatch(/; path=\/oidc\/device(;|$)/);
    expect(res.headerAll('set-cookie').find((c) => c.startsWith('_session.sig='))).toMatch(
      /; path=\/oidc\/device(;|$)/,
    );
  });

  test('the device authorization request needs openid (invalid_scope); configTypes and offline_access reach the tokens', async () => {
    const noOpenid = await server.client.post('/oidc/device/auth', {
      form: { client_id: 'svc', scope: 'offline_access' },
    });
    expect(noOpenid.status).toBe(400);
    expect(noOpenid.body.error).toBe('invalid_scope');

    // Repeated, as at the authorization endpoint (openid-client would join them into one value).
    const started = await server.client.post('/oidc/device/auth', {
      form: { client_id: 'svc', scope: 'openid offline_access', configTypes: ['ct-a', 'ct-b'] },
    });
    expect(started.status).toBe(200);
    const done = await personSignsIn(cookieJar(server.client), started.body.verification_uri_complete, admin);
    expect(headingOf(done.text)).toBe('Device signed in');
    const issued = await pollOnce(server.client, started.body.device_code);

    expect(issued.status).toBe(200);
    expect(payloadOf(issued.body.access_token).z_ct).toEqual(['ct-a', 'ct-b']);
    expect(issued.body.refresh_token).toBeDefined();
  });

  test('malformed requests get a 4xx answer, never a 5xx', async () => {
    const answers = [
      await server.client.post('/oidc/device/auth', { body: { client_id: 'svc', scope: 'openid' } }),
      await server.client.post('/oidc/device/auth', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `client_id=svc&scope=openid&pad=${'x'.repeat(60 * 1024)}`,
      }),
      await server.client.post('/oidc/device/auth', { form: { scope: 'openid' } }),
      await server.client.post('/oidc/device/auth', {
        form: { client_id: 'svc', scope: ['openid', 'openid'] },
      }),
      await server.client.post('/oidc/device', { form: { user_code: 'BBBB-BBBB', confirm: 'yes' } }),
      await server.client.post('/oidc/device', { body: 'not a form' }),
      await server.client.post('/oidc/token', { form: { grant_type: DEVICE_GRANT, client_id: 'svc' } }),
      await server.client.request('PUT', '/oidc/device'),
    ];
    const hostileLink = await server.client.get('/oidc/device?user_code=%3Cscript%3Ealert(1)%3C/script%3E');

    for (const res of answers) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    }
    expect(hostileLink.status).toBe(200);
    expect(headingOf(hostileLink.text)).toBe('Sign in on a device');
    expect(hostileLink.text).not.toContain('<script');
  });

  test('audit events name the device authorization and the confirmation', async () => {
    await confirmedDevice();

    const names = audit.events().map((e) => e.event);
    expect(names).toContain('oidc.device.authorization');
    expect(names).toContain('oidc.device.confirmed');
    const confirmed = audit.events().find((e) => e.event === 'oidc.device.confirmed')!;
    expect(typeof confirmed.identityId).toBe('string');
  });

  test('metrics count device authorizations, confirmations, declines and expiries', async () => {
    const metrics = await server.client.get('/metrics');
    const count = (event: string) =>
      Number(
        new RegExp(`^svc_device_flow_events_total\\{event="${event}"\\} (\\d+)$`, 'm').exec(
          metrics.text,
        )?.[1],
      );

    expect(metrics.status).toBe(200);
    expect(count('authorization')).toBeGreaterThanOrEqual(8);
    expect(count('confirmed')).toBeGreaterThanOrEqual(4);
    expect(count('declined')).toBe(1);
    expect(count('expired')).toBe(1);
  });
});
