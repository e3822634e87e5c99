import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { AuditEventRow } from '../../src/repositories/audit-event-row.js';
import { capturedAuditLog } from '../helpers/audit-log.js';
import type { HttpsClient } from '../helpers/https-client.js';
import { clientBehindHeader, proxyV2 } from '../helpers/proxy-header.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { cookieJar, inputValue } from '../device-flow/device-fixtures.js';
import {
  CLIENT,
  enrolledUpdbUser,
  managementApi,
  passwordLogin,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import { storedEvents } from './store-fixtures.js';

/** The rows of one aggregate, one per minute: the attempts of each and their sum. */
const attemptsOf = (rows: AuditEventRow[]) => rows.reduce((n, r) => n + r.attempts, 0);
const minutesOf = (rows: AuditEventRow[]) =>
  new Set(rows.map((r) => Math.floor(new Date(r.occurred_at).getTime() / 60_000))).size;

/** The address our stand-in TCP proxy connects from, trusted to name IPv6 clients. */
const PROXY = '127.0.0.2';

const passwordLoginBy = (client: HttpsClient, username: string, password: string) =>
  client.post(`${CLIENT}/authenticate?method=password`, { body: { username, password } });

/**
 * Failed logins are stored as one row per event, outcome, method, identity (none for a username
 * that names no identity), client address network and minute, with a count: guessing costs rows
 * per minute, not per attempt, whatever usernames or addresses of its /64 it varies.
 */
describe('stored failed attempts', () => {
  const { logger, events } = capturedAuditLog();
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    server = await startTestServer({ logger, env: { SVC_PROXY_PROTOCOL_TRUSTED_FROM: `${PROXY}/32` } });
    api = managementApi(server, await server.adminToken());
  }, 180_000);
  afterAll(() => server?.close());

  const from = (address: string): HttpsClient => server.newClient({ localAddress: address });

  /** Starts a burst of attempts early in a minute of the database's clock, so that it fits in one. */
  async function atTheStartOfAMinute(): Promise<void> {
    const { rows } = await server.app.knex.raw('SELECT extract(second FROM clock_timestamp())::float8 AS s');
    const second = Number(rows[0].s);
    if (second > 40) await new Promise((r) => setTimeout(r, (60 - second) * 1000 + 100));
  }

  test('20 wrong passwords of one identity from one address within a minute are one row of 20 attempts', async () => {
    // No lockout: every attempt is a plain failure.
    const policy = await api.post('/auth-policies', {
      body: { name: 'no-lockout', primary: { updb: { maxAttempts: 0 } } },
    });
    expect(policy.status).toBe(201);
    const user = await enrolledUpdbUser(server, api, 'guessed-user', { authPolicyId: policy.body.data.id });

    await atTheStartOfAMinute();
    const passwords = Array.from({ length: 20 }, (_, i) => `Guess-Password-${i}-x`);
    for (const password of passwords) {
      expect((await passwordLogin(server, user.username, password)).status).toBe(401);
    }

    const rows = await storedEvents(server.app.knex, 'auth.login', {
      identity_id: user.id,
      outcome: 'failure',
    });
    // One row per minute the burst touched: one, unless the database was slower than 30 seconds.
    expect(rows).toHaveLength(minutesOf(rows));
    expect(attemptsOf(rows)).toBe(20);
    expect(rows[0]).toMatchObject({
      source_address: '127.0.0.1',
      details: { method: 'password', reason: 'wrong-password' },
    });
    expect(rows[0]!.last_at).not.toBeNull();
    if (rows.length === 1) expect(rows[0]!.attempts).toBe(20);
    // Each attempt is still one log line.
    const lines = events().filter(
      (e) => e.event === 'auth.login' && e.identityId === user.id && e.outcome === 'failure',
    );
    expect(lines).toHaveLength(20);
    // The stored rows hold no password.
    const stored = JSON.stringify(rows);
    for (const password of passwords) expect(stored).not.toContain(password);
  });

  test('31 distinct unknown usernames from one address within a minute are one row, naming none of them', async () => {
    // Case and whitespace variants too, and a password typed into the username field.
    const usernames = [
      ...Array.from({ length: 28 }, (_, i) => `nobody-by-this-name-${i}`),
      'Nobody-By-This-Name-0',
      ' nobody-by-this-name-0 ',
      'Typed-Into-Username-Secret-1',
    ];
    expect(new Set(usernames).size).toBe(31);
    const client = from('127.0.0.7');
    await atTheStartOfAMinute();
    for (const username of usernames) {
      expect((await passwordLoginBy(client, username, 'Unknown-Secret-x')).status).toBe(401);
    }

    const rows = await storedEvents(server.app.knex, 'auth.login', { source_address: '127.0.0.7' });
    // One row per minute the burst touched: one, unless the database was slower than 20 seconds.
    expect(rows).toHaveLength(minutesOf(rows));
    expect(attemptsOf(rows)).toBe(31);
    if (rows.length === 1) expect(rows[0]!.attempts).toBe(31);
    expect(rows[0]).toMatchObject({
      outcome: 'failure',
      identity_id: null,
      details: { reason: 'unknown-username', method: 'password' },
    });
    for (const row of rows) expect(row.details).not.toHaveProperty('username');
    // No typed username anywhere: in no column, in no details, in no key.
    const text = JSON.stringify(await server.app.knex('audit_events').select('*')).toLowerCase();
    for (const username of usernames) expect(text).not.toContain(username.trim().toLowerCase());
    expect(text).not.toContain('unknown-secret');
    // Each attempt is still one log line, without the username.
    const lines = events().filter((e) => e.event === 'auth.login' && e.sourceAddress === '127.0.0.7');
    expect(lines).toHaveLength(31);
    for (const line of lines) expect(line.username).toBeUndefined();
  });

  test('failures of different methods from one address within a minute are separate rows', async () => {
    const client = from('127.0.0.8');
    await atTheStartOfAMinute();
    for (let i = 0; i < 2; i++) {
      expect((await passwordLoginBy(client, `mixed-unknown-${i}`, 'Mixed-Secret-x')).status).toBe(401);
      const jwt = await client.post(`${CLIENT}/authenticate?method=ext-jwt`, {
        headers: { authorization: 'Bearer not.a.jwt' },
      });
      expect(jwt.status).toBe(401);
    }
    const rows = await storedEvents(server.app.knex, 'auth.login', { source_address: '127.0.0.8' });
    for (const method of ['password', 'ext-jwt']) {
      const ofMethod = rows.filter((r) => r.details.method === method);
      expect(ofMethod).toHaveLength(minutesOf(ofMethod));
      expect(attemptsOf(ofMethod)).toBe(2);
    }
    expect(rows.find((r) => r.details.method === 'ext-jwt')!.details.reason).not.toBe('unknown-username');
  });

  test('attempts from addresses of one IPv6 /64 are one row; another /64 gets its own', async () => {
    const user = await enrolledUpdbUser(server, api, 'ipv6-guessed-user');
    // Through the PROXY protocol, the only way a test on IPv4 loopback presents IPv6 clients.
    const fromV6 = (address: string) =>
      clientBehindHeader(server.url, {
        ca: server.ca,
        localAddress: PROXY,
        header: () => [proxyV2({ address, port: 40000 })],
      });
    const inOne64 = ['2001:db8:1:2::a', '2001:db8:1:2:ffff::b', '2001:db8:1:2:1234:5678:9abc:def0'];
    await atTheStartOfAMinute();
    for (const [i, address] of [...inOne64, '2001:db8:1:3::1'].entries()) {
      const client = fromV6(address);
      expect((await passwordLoginBy(client, user.username, `Wrong-V6-${i}`)).status).toBe(401);
      expect((await passwordLoginBy(client, `unknown-v6-${i}`, `Wrong-V6-${i}`)).status).toBe(401);
      await client.close();
    }
    const rows = await storedEvents(server.app.knex, 'auth.login', { outcome: 'failure' });
    const v6 = rows.filter((r) => r.source_address?.startsWith('2001:db8:'));
    for (const identity of [user.id, null]) {
      const ofIdentity = v6.filter((r) => r.identity_id === identity);
      const one64 = ofIdentity.filter((r) => r.source_address!.startsWith('2001:db8:1:2:'));
      expect(one64).toHaveLength(minutesOf(one64));
      expect(attemptsOf(one64)).toBe(3);
      // The row keeps the full address of its minute's first attempt.
      expect(one64[0]!.source_address).toBe('2001:db8:1:2::a');
      const other = ofIdentity.filter((r) => r.source_address === '2001:db8:1:3::1');
      expect(other).toHaveLength(1);
      expect(other[0]!.attempts).toBe(1);
    }
  });

  test('ten wrong device user codes from one address within a minute are one row', async () => {
    const browser = cookieJar(from('127.0.0.9'));
    await atTheStartOfAMinute();
    let page = await browser.get('/oidc/device');
    for (let i = 0; i < 10; i++) {
      page = await browser.post('/oidc/device', {
        form: { xsrf: inputValue(page.text, 'xsrf') ?? '', user_code: 'BBBB-BBBB' },
      });
      expect(page.status).toBe(400);
    }
    const rows = await storedEvents(server.app.knex, 'oidc.device.user-code-wrong', {
      source_address: '127.0.0.9',
    });
    expect(rows).toHaveLength(minutesOf(rows));
    expect(attemptsOf(rows)).toBe(10);
    expect(rows[0]).toMatchObject({ outcome: 'failure' });
    expect(
      events().filter((e) => e.event === 'oidc.device.user-code-wrong' && e.sourceAddress === '127.0.0.9'),
    ).toHaveLength(10);
  });

  test('the attempt that locks an identity is stored in the transaction that locks it', async () => {
    const policy = await api.post('/auth-policies', {
      body: { name: 'three-strikes', primary: { updb: { maxAttempts: 3, lockoutDurationMinutes: 5 } } },
    });
    expect(policy.status).toBe(201);
    const user = await enrolledUpdbUser(server, api, 'locked-user', { authPolicyId: policy.body.data.id });
    await atTheStartOfAMinute();
    for (let i = 0; i < 3; i++) {
      expect((await passwordLogin(server, user.username, `Wrong-Lock-${i}`)).status).toBe(401);
    }
    const [lockout] = await storedEvents(server.app.knex, 'auth.login', {
      identity_id: user.id,
      outcome: 'lockout',
    });
    expect(lockout).toMatchObject({ attempts: 1, details: { method: 'password', reason: 'wrong-password' } });
    const [revocation] = await storedEvents(server.app.knex, 'revocation.published', {
      identity_id: user.id,
    });
    expect(revocation).toMatchObject({ details: { kind: 'identity', cause: 'lockout' } });
    expect(lockout!.tx).toBe(revocation!.tx);
    expect(
      attemptsOf(
        await storedEvents(server.app.knex, 'auth.login', { identity_id: user.id, outcome: 'failure' }),
      ),
    ).toBe(2);
    const lines = events().filter(
      (e) => e.event === 'auth.login' && e.identityId === user.id && e.outcome === 'lockout',
    );
    expect(lines).toHaveLength(1);
  });

  test('a later attempt moves the row to its own transaction, so followers of the trail see the new count', async () => {
    const user = await enrolledUpdbUser(server, api, 'followed-user');
    await atTheStartOfAMinute();
    expect((await passwordLogin(server, user.username, 'Wrong-Follow-1')).status).toBe(401);
    const [before] = await storedEvents(server.app.knex, 'auth.login', {
      identity_id: user.id,
      outcome: 'failure',
    });
    expect((await passwordLogin(server, user.username, 'Wrong-Follow-2')).status).toBe(401);
    const after = await storedEvents(server.app.knex, 'auth.login', {
      identity_id: user.id,
      outcome: 'failure',
    });
    const same = after.find((r) => r.id === before!.id);
    if (!same) return; // the minute turned between the two: a new row, which is as new as it gets
    expect(same.attempts).toBe(2);
    expect(BigInt(same.tx)).toBeGreaterThan(BigInt(before!.tx));
  });
});
