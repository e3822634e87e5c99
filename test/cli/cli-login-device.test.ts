// `svc login --device` (RFC 8628) against a real controller: the CLI runs as its own process and
// polls; the person's side is a cookie-jar HTTPS client on the controller's own pages. Access
// tokens live one minute here (the shortest the configuration allows), so the CLI's refresh
// before expiry can be seen within a test.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  cookieJar,
  deviceRow,
  expireDeviceCode,
  headingOf,
  inputValue,
  personSignsIn,
  pollOnce,
} from '../device-flow/device-fixtures.js';
import { waitFor } from '../helpers/wait-for.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import { mode, oneLine } from './cli-fixture.js';
import { readSession, sessionFileOf, startDeviceLogin, writeSession } from './device-login-fixture.js';
import { runSvc } from './run-svc.js';

const admin = { username: ADMIN_USERNAME, password: ADMIN_PASSWORD };

describe('svc login --device', () => {
  let server: TestServer;
  let caFile: string;
  const homes: string[] = [];
  const newHome = () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-cli-device-'));
    homes.push(home);
    return home;
  };
  beforeAll(async () => {
    server = await startTestServer({ env: { SVC_OIDC_ACCESS_TOKEN_DURATION: '1m' } });
    caFile = join(server.dataDir, 'pki', 'ca.pem');
  });
  afterAll(async () => {
    await server.close();
    for (const home of homes) rmSync(home, { recursive: true, force: true });
  });

  const edgeCall = (accessToken: string) =>
    server.client.get('/edge/client/v1/current-identity', {
      headers: { authorization: `Bearer ${accessToken}` },
    });

  /** `svc login --device` in `home`, the admin confirming on the link it printed. */
  async function deviceLogin(home: string, extra: string[] = []) {
    const login = startDeviceLogin(['login', server.url, '--device', '--ca', caFile, ...extra], home);
    const signedIn = await personSignsIn(cookieJar(server.client), await login.link(), admin);
    expect(headingOf(signedIn.text)).toBe('Device signed in');
    return login.done;
  }

  test('it prints the link and the code, waits for the person, and keeps access and refresh tokens; later commands use them', async () => {
    const home = newHome();

    const result = await deviceLogin(home);

    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(
      /^To sign in, open https:\/\/127\.0\.0\.1:\d+\/oidc\/device and enter the code [B-Z]{4}-[B-Z]{4}$/m,
    );
    expect(result.stdout).toMatch(/^or open https:\/\/127\.0\.0\.1:\d+\/oidc\/device\?user_code=/m);
    // stdout is a pipe: no QR code, no escape sequences.
    expect(result.stdout).not.toMatch(/[▀▄█]/);
    expect(result.stdout).not.toContain('\u001b');
    expect(result.stdout).toContain(`Logged in to ${server.url} as ${ADMIN_USERNAME}`);
    expect(mode(sessionFileOf(home))).toBe(0o600);
    const session = readSession(home);
    expect(session).toEqual({
      kind: 'oidc',
      url: server.url,
      ca: server.ca,
      tokenEndpoint: `${server.url}/oidc/token`,
      accessToken: expect.any(String),
      refreshToken: expect.any(String),
      obtainedAt: expect.any(String),
      accessTokenExpiresAt: expect.any(String),
    });
    const lifetime = Date.parse(session.accessTokenExpiresAt) - Date.parse(session.obtainedAt);
    expect(lifetime).toBe(60_000);
    expect((await edgeCall(session.accessToken)).status).toBe(200);

    // The next command sends the access token (Bearer): its API session is the device flow's.
    const listed = await runSvc(['edge', 'list', 'api-sessions', '--json'], { home });
    expect(listed).toMatchObject({ code: 0, stderr: '' });
    const mine = JSON.parse(listed.stdout).find(
      (s: { id: string }) => s.id === payloadOf(session.accessToken).z_asid,
    );
    expect(mine).toMatchObject({ kind: 'oidc', authMethod: 'password', identity: { name: ADMIN_USERNAME } });
    // Far from its expiry, the access token was not refreshed.
    expect(readSession(home)).toEqual(session);
  });

  test('--json: the instructions go to stderr and stdout holds one JSON document, without tokens', async () => {
    const home = newHome();

    const result = await deviceLogin(home, ['--json']);

    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^To sign in, open https:.* and enter the code [B-Z]{4}-[B-Z]{4}$/m);
    const printed = JSON.parse(result.stdout);
    expect(printed).toEqual({
      url: server.url,
      sessionFile: sessionFileOf(home),
      identityId: expect.any(String),
      identity: { id: printed.identityId, name: ADMIN_USERNAME },
      accessTokenExpiresAt: readSession(home).accessTokenExpiresAt,
      refreshable: true,
    });
    expect(result.stdout).not.toContain(readSession(home).accessToken);
  });

  test('on a terminal it also draws a QR code of the link', async () => {
    const home = newHome();
    const login = startDeviceLogin(['login', server.url, '--device', '--ca', caFile], home, {
      TERM: 'xterm-256color',
      COLUMNS: '120',
    });
    const link = await login.link();
    // The person declines, to end the wait.
    const browser = cookieJar(server.client);
    const form = await browser.get(link);
    const confirm = await browser.post('/oidc/device', {
      form: { xsrf: inputValue(form.text, 'xsrf')!, user_code: inputValue(form.text, 'user_code')! },
    });
    await browser.post('/oidc/device', {
      form: { xsrf: inputValue(confirm.text, 'xsrf')!, user_code: await login.userCode(), abort: 'yes' },
    });
    const { stdout: screen } = await login.done;

    const qrRows = screen.split('\n').filter((line) => /[▀▄█]/.test(line));
    expect(qrRows.length).toBeGreaterThan(10);
    expect(screen).toContain('the sign-in was declined');
  });

  test('the person declines: one line saying so, exit 1, nothing stored', async () => {
    const home = newHome();
    const login = startDeviceLogin(['login', server.url, '--device', '--ca', caFile], home);
    const browser = cookieJar(server.client);
    const form = await browser.get(await login.link());
    const confirm = await browser.post('/oidc/device', {
      form: { xsrf: inputValue(form.text, 'xsrf')!, user_code: inputValue(form.text, 'user_code')! },
    });
    const declined = await browser.post('/oidc/device', {
      form: { xsrf: inputValue(confirm.text, 'xsrf')!, user_code: await login.userCode(), abort: 'yes' },
    });
    expect(headingOf(declined.text)).toBe('Sign-in declined');

    const result = await login.done;

    expect(result.code).toBe(1);
    expect(oneLine(result.stderr)).toBe(true);
    expect(result.stderr).toBe(
      'svc: the sign-in was declined on the verification page: nothing was stored\n',
    );
    expect(existsSync(sessionFileOf(home))).toBe(false);
  });

  test('the code expires before anyone confirms: one line saying so, exit 1, nothing stored', async () => {
    const home = newHome();
    const login = startDeviceLogin(['login', server.url, '--device', '--ca', caFile], home);
    const userCode = await login.userCode();

    await expireDeviceCode(server, userCode, 10);
    const result = await login.done;

    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `svc: the code ${userCode} expired before the sign-in was confirmed: run svc login --device again\n`,
    );
    expect(existsSync(sessionFileOf(home))).toBe(false);
  });

  test('the session is saved under the session lock: while another command holds it, the login waits for it', async () => {
    const home = newHome();
    const lock = `${sessionFileOf(home)}.lock`;
    mkdirSync(dirname(lock), { recursive: true, mode: 0o700 });
    writeFileSync(lock, '');
    const login = startDeviceLogin(['login', server.url, '--device', '--ca', caFile], home);
    const userCode = await login.userCode();

    await personSignsIn(cookieJar(server.client), await login.link(), admin);
    await waitFor(async () => (await deviceRow(server, userCode))?.consumed_at != null, {
      timeout: 30_000,
      what: 'the CLI redeeming its device code',
    });
    // Time enough to fetch the identity and save; it must wait for the lock instead.
    await sleep(2000);
    const savedWhileLocked = existsSync(sessionFileOf(home));
    rmSync(lock);
    const result = await login.done;

    expect(savedWhileLocked).toBe(false);
    expect(result.code).toBe(0);
    expect(readSession(home).accessToken).toEqual(expect.any(String));
    expect(existsSync(lock)).toBe(false);
  });

  test('--device takes no username or password', async () => {
    const result = await runSvc(['login', server.url, '--device', '-u', 'admin', '--ca', caFile], {
      home: newHome(),
    });

    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr: 'svc: --device signs in on another device: it takes no --username\n',
    });
  });

  test('a session file as older versions wrote it ({url, token, ca}) still works', async () => {
    const home = newHome();
    mkdirSync(join(home, 'config', 'svc'), { recursive: true, mode: 0o700 });
    writeSession(home, { url: server.url, token: await server.adminToken(), ca: server.ca });

    const listed = await runSvc(['edge', 'list', 'identities', '--json'], { home });

    expect(listed).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(listed.stdout).map((i: { name: string }) => i.name)).toContain(ADMIN_USERNAME);
  });

  test('within its last half minute the access token is refreshed before the command; two commands at once refresh once', async () => {
    const home = newHome();
    expect((await deviceLogin(home)).code).toBe(0);
    const before = readSession(home);

    // Half of the one-minute lifetime is the refresh margin: wait until it has begun.
    const due = Date.parse(before.obtainedAt) + 30_000;
    await sleep(Math.max(0, due - Date.now()) + 1000);
    const together = await Promise.all([
      runSvc(['edge', 'list', 'identities', '--json'], { home }),
      runSvc(['edge', 'list', 'api-sessions', '--json'], { home }),
    ]);

    for (const r of together) expect(r).toMatchObject({ code: 0, stderr: '' });
    const after = readSession(home);
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(after.refreshToken).not.toBe(before.refreshToken);
    expect(Date.parse(after.accessTokenExpiresAt)).toBeGreaterThan(Date.parse(before.accessTokenExpiresAt));
    expect(mode(sessionFileOf(home))).toBe(0o600);
    expect(existsSync(`${sessionFileOf(home)}.lock`)).toBe(false);
    // One refresh: a second one with the rotated refresh token would have ended the session.
    expect(payloadOf(after.accessToken).z_asid).toBe(payloadOf(before.accessToken).z_asid);
    expect((await edgeCall(after.accessToken)).status).toBe(200);
    const again = await runSvc(['edge', 'list', 'identities'], { home });
    expect(again.code).toBe(0);
  }, 120_000);

  test('a session ended on the server (svc edge delete api-session) says to run svc login again', async () => {
    const home = newHome();
    expect((await deviceLogin(home)).code).toBe(0);
    const { accessToken } = readSession(home);

    const ended = await runSvc(['edge', 'delete', 'api-session', payloadOf(accessToken).z_asid], { home });
    const after = await runSvc(['edge', 'list', 'identities'], { home });

    expect(ended.code).toBe(0);
    expect(after.code).toBe(1);
    expect(oneLine(after.stderr)).toBe(true);
    expect(after.stderr).toMatch(/^svc: .*\(UNAUTHORIZED\): the session has ended, run svc login again\n$/);
  });

  test('a refresh the server refuses says to run svc login again', async () => {
    const home = newHome();
    expect((await deviceLogin(home)).code).toBe(0);
    const session = readSession(home);
    // The refresh token is revoked (RFC 7009), as a logout elsewhere would.
    const revoked = await server.client.post('/oidc/revoke', {
      form: { token: session.refreshToken, client_id: 'svc', token_type_hint: 'refresh_token' },
    });
    expect(revoked.status).toBe(200);
    // The stored expiry is moved to now, as if the minute had passed: the next command refreshes.
    writeSession(home, { ...session, accessTokenExpiresAt: new Date().toISOString() });

    const result = await runSvc(['edge', 'list', 'identities'], { home });

    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'svc: the session has ended (its refresh token was refused): run svc login again\n',
    );
  });
});

describe('svc login --device against a busy controller', () => {
  let server: TestServer;
  let caFile: string;
  const home = mkdtempSync(join(tmpdir(), 'svc-cli-device-busy-'));
  beforeAll(async () => {
    // The token endpoint's budget: 8 requests per 8-second window per address.
    server = await startTestServer({
      env: { SVC_RATE_LIMITS_ENABLED: 'true', SVC_RATE_LIMITS_PER_SECOND: '1', SVC_RATE_LIMITS_BURST: '8' },
    });
    caFile = join(server.dataDir, 'pki', 'ca.pem');
  });
  afterAll(async () => {
    await server.close();
    rmSync(home, { recursive: true, force: true });
  });

  test('a 429 while polling is no failure: the CLI says so, waits longer and polls again until the sign-in is confirmed', async () => {
    const login = startDeviceLogin(['login', server.url, '--device', '--ca', caFile], home);
    const link = await login.link();
    // The CLI's address (127.0.0.1) spends its token endpoint budget before the CLI's first poll.
    const statuses: number[] = [];
    while (!statuses.includes(429))
      statuses.push((await pollOnce(server.client, 'not-a-device-code')).status);
    const person = cookieJar(server.newClient({ localAddress: '127.0.0.2' }));
    const signedIn = await personSignsIn(person, link, admin);

    const result = await login.done;

    expect(headingOf(signedIn.text)).toBe('Device signed in');
    expect(result.stderr).toMatch(/^the controller is busy \(HTTP 429\): asking again in 10 seconds$/m);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Logged in to ${server.url} as ${ADMIN_USERNAME}`);
    expect(
      (
        await server.client.get('/edge/client/v1/current-identity', {
          headers: { authorization: `Bearer ${readSession(home).accessToken}` },
        })
      ).status,
    ).toBe(200);
  }, 60_000);
});
