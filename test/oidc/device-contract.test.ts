import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { openPayload } from '../../src/oidc/stored-payload.js';
import { oidcPayloadsRepository } from '../../src/repositories/oidc-payloads-repository.js';
import { capturedAuditLog } from '../helpers/audit-log.js';
import { waitFor } from '../helpers/wait-for.js';
import { refreshTokens } from '../helpers/oidc-client.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { managementApi, enrolledUpdbUser } from '../identities/identity-fixtures.js';
import {
  authRequestIdOf,
  confirmCode,
  cookieJar,
  deviceClient,
  deviceRow,
  expireDeviceCode,
  headingOf,
  inputValue,
  personSignsIn,
  pollOnce,
  startDevice,
} from '../device-flow/device-fixtures.js';
import { issuerOf } from './oidc-fixtures.js';

const admin = { username: ADMIN_USERNAME, password: ADMIN_PASSWORD };

/** The installed provider's source of one module (as the upgrade would change it). */
const providerSource = (path: string) => readFileSync(`node_modules/oidc-provider/lib/${path}`, 'utf8');

/**
 * The device authorization grant (RFC 8628, src/oidc/device-flow.ts and the device code paths of
 * src/oidc/postgres-adapter.ts) relies on these oidc-provider behaviours; an upgrade that changes
 * any of them must fail here, naming the behaviour, before it breaks device sign-ins.
 */
describe('contract: oidc-provider internals behind the device authorization grant', () => {
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

  const entry = () =>
    server.app.services.oidc!.registry.pick(server.app.listeners[0]!.spec, new URL(server.url).host)!;
  const normalized = (userCode: string) => userCode.replace(/-/g, '');

  test("a device interaction's deviceCode is the id findByUserCode gave the code: the adapter's user-code: name", async () => {
    const started = await startDevice(device.config);
    const { login } = await confirmCode(cookieJar(server.client), started.verification_uri_complete!);
    expect(login.status).toBe(303);

    const interaction = (await entry().provider.Interaction.find(authRequestIdOf(login))) as unknown as {
      deviceCode?: string;
    };
    const byUserCode = await entry().provider.DeviceCode.findByUserCode(normalized(started.user_code));

    expect(interaction.deviceCode).toBe(`user-code:${normalized(started.user_code)}`);
    expect(byUserCode!.jti).toBe(interaction.deviceCode);
    // The interaction takes the id of the code the confirmation found, whatever that id is.
    expect(providerSource('actions/authorization/interactions.js')).toContain(
      'deviceCode: oidc.deviceCode?.jti,',
    );
  });

  test('a Session the provider makes for a request has no exp until it is stored', async () => {
    const { Session } = entry().provider as unknown as {
      Session: { instantiate(payload?: object): { exp?: number } };
    };

    // No cookie, and a cookie naming no stored session: the two ways the provider makes one.
    expect(Session.instantiate().exp).toBeUndefined();
    expect(Session.instantiate({}).exp).toBeUndefined();
    // And what the code form then does with it: a post with a forged session cookie is shown the
    // form again, with a new session cookie that lives as long as the form (keepNewFormSession).
    const forged = await server.client.post('/oidc/device', {
      headers: { cookie: '_session=forged-session-id' },
      form: { xsrf: 'forged', user_code: 'BCDF-GHJK' },
    });
    const cookie = forged.headerAll('set-cookie').find((c) => c.startsWith('_session='));
    expect(forged.status).toBe(400);
    expect(cookie).toMatch(/path=\/oidc\/device/i);
    const expires = Date.parse(/expires=([^;]+)/i.exec(cookie!)![1]!);
    expect(expires - Date.now()).toBeGreaterThan(500_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(600_000);
  });

  test('ttl.Session is called with the request: the code form’s session is stored for the form’s 600 s, not a login session’s', async () => {
    const form = await server.client.get('/oidc/device');
    const cookie = form.headerAll('set-cookie').find((c) => c.startsWith('_session='));
    const id = /^_session=([^;]+)/.exec(cookie!)![1]!;

    const row = await oidcPayloadsRepository.find(server.app.knex, 'Session', id, new Date());

    expect(form.status).toBe(200);
    const seconds = (openPayload(id, row!.payload).exp as number) - Date.now() / 1000;
    expect(seconds).toBeGreaterThan(500);
    expect(seconds).toBeLessThanOrEqual(600);
  });

  test('an error the adapter’s find throws at the token endpoint reaches the device as it is: SlowDown is slow_down', async () => {
    const started = await startDevice(device.config);

    await pollOnce(server.client, started.device_code);
    const early = await pollOnce(server.client, started.device_code);

    expect(early.status).toBe(400);
    // Our description, from postgres-adapter.ts: the provider has no poll interval of its own.
    expect(early.body).toEqual({
      error: 'slow_down',
      error_description: 'poll at most every 10 seconds',
    });
  });

  test('the device code keeps what deviceInfo(ctx) returned, and the person’s side reads it from ctx.oidc.deviceCode', async () => {
    const started = await startDevice(device.config);
    const row = await deviceRow(server, started.user_code);
    const browser = cookieJar(server.client);

    const linked = await browser.get(started.verification_uri_complete!);
    const confirm = await browser.post('/oidc/device', {
      form: { xsrf: inputValue(linked.text, 'xsrf')!, user_code: started.user_code },
    });

    expect(openPayload(started.device_code, row.payload).deviceInfo).toEqual({
      ip: '127.0.0.1',
      issuer: issuerOf(server),
    });
    // userCodeConfirmSource is given the code's deviceInfo: the confirmation names the address.
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('127.0.0.1');
    // deviceIssuerOf reads the issuer at the login's end from the code the resume loaded.
    expect(providerSource('helpers/oidc_context.js')).toMatch(
      /get deviceCode\(\) \{\s*return this\.entities\.DeviceCode;/,
    );
  });

  test('at the login’s end ctx.oidc.deviceCode.deviceInfo is the device’s: its issuer, not the one the person typed the code at, owns the login', async () => {
    const localhost = server.url.replace('127.0.0.1', 'localhost');
    const local = await deviceClient(server, 'localhost');
    const atLocalhost = server.newClient({}, localhost);
    try {
      const started = await startDevice(local.config);
      const viaIp = started.verification_uri_complete!.replace(localhost, server.url);

      const done = await personSignsIn(cookieJar(server.client), viaIp, admin);
      const issued = await pollOnce(atLocalhost, started.device_code);
      // A refresh token is redeemed only at its login's issuer (the login facts deviceIssuerOf wrote).
      const refreshed = await refreshTokens(atLocalhost, issued.body.refresh_token);

      expect(headingOf(done.text)).toBe('Device signed in');
      expect(issued.status).toBe(200);
      expect(refreshed.status).toBe(200);
    } finally {
      await local.close();
    }
  });

  test('the grant.error event carries the error as err.error: an expired device code is audited as oidc.device.expired', async () => {
    const seen: unknown[] = [];
    const listener = (_ctx: unknown, err: { error?: unknown }) => void seen.push(err?.error);
    entry().provider.on('grant.error', listener);
    try {
      const started = await startDevice(device.config);
      await expireDeviceCode(server, started.user_code, 10);

      const poll = await pollOnce(server.client, started.device_code);

      expect(poll.body.error).toBe('expired_token');
      expect(seen).toEqual(['expired_token']);
      // Logged once its own insert has committed, after the poll was answered.
      await waitFor(() => audit.events().some((e) => e.event === 'oidc.device.expired'), {
        what: 'the oidc.device.expired audit event',
      });
    } finally {
      entry().provider.off('grant.error', listener);
    }
  });

  test('a login refused after its confirmation (the identity deleted meanwhile) shows our "could not be completed" page, and the device gets access_denied', async () => {
    const api = managementApi(server, await server.adminToken());
    const user = await enrolledUpdbUser(server, api, 'device-contract-gone');
    const started = await startDevice(device.config);
    const confirmations = () => audit.events().filter((e) => e.event === 'oidc.device.confirmed').length;
    const confirmedBefore = confirmations();
    // The identity is deleted just as the finished login's API session is written: the provider's
    // resume then meets the AccessDenied of account-policy.ts `loadExistingGrant`, the one refusal
    // that comes after the login pages' own checks. The statement fails, so the delete is undone.
    await server.app.knex.raw(
      `CREATE FUNCTION device_contract_gone() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         DELETE FROM identities WHERE id = NEW.identity_id;
         RETURN NEW;
       END $$`,
    );
    await server.app.knex.raw(
      `CREATE TRIGGER device_contract_gone BEFORE INSERT ON api_sessions FOR EACH ROW
         WHEN (NEW.identity_id = '${user.id}') EXECUTE FUNCTION device_contract_gone()`,
    );
    try {
      const refused = await personSignsIn(cookieJar(server.client), started.verification_uri_complete!, user);
      const poll = await pollOnce(server.client, started.device_code);

      expect(refused.status).toBe(400);
      expect(refused.text).toContain('The sign-in could not be completed. Start it on your device again.');
      expect(headingOf(refused.text)).not.toBe('Sign-in declined');
      expect(confirmations()).toBe(confirmedBefore);
      expect(poll.status).toBe(400);
      expect(poll.body.error).toBe('access_denied');
    } finally {
      await server.app.knex.raw('DROP TRIGGER device_contract_gone ON api_sessions');
      await server.app.knex.raw('DROP FUNCTION device_contract_gone()');
    }
    // The split itself: a decline is AbortedError without a cause, a refusal carries the provider's error.
    expect(providerSource('actions/code_verification.js')).toContain('throw new AbortedError();');
    expect(providerSource('actions/authorization/device.js')).toContain('throw new AbortedError({ cause });');
  });

  test('a device code is consumed before its grant is loaded, which is why the adapter reads a confirmed code with its grant', () => {
    const grant = providerSource('actions/grants/device_code.js');

    const found = grant.indexOf('await findGrantSource(');
    const consumed = grant.indexOf("await consumeGrantSource(ctx, code, 'device code');");
    const validated = grant.indexOf('await validateGrant(ctx, code.grantId);');

    expect(found).toBeGreaterThan(-1);
    expect(consumed).toBeGreaterThan(found);
    expect(validated).toBeGreaterThan(consumed);
  });
});
