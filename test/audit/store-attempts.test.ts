import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { AuditEventRow } from '../../src/repositories/audit-event-row.js';
import { capturedAuditLog } from '../helpers/audit-log.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import {
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

/**
 * Failed logins are stored as one row per event, outcome, identity (or unknown username), client
 * address and minute, with a count: guessing costs rows per minute, not per attempt.
 */
describe('stored failed attempts', () => {
  const { logger, events } = capturedAuditLog();
  let server: TestServer;
  let api: ManagementApi;

  beforeAll(async () => {
    server = await startTestServer({ logger });
    api = managementApi(server, await server.adminToken());
  }, 180_000);
  afterAll(() => server?.close());

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

  test('an unknown username is aggregated under that username, apart from identities', async () => {
    await atTheStartOfAMinute();
    for (let i = 0; i < 3; i++) {
      expect((await passwordLogin(server, 'nobody-by-this-name', `Unknown-Secret-${i}`)).status).toBe(401);
    }
    expect((await passwordLogin(server, 'someone-else-unknown', 'Unknown-Secret-x')).status).toBe(401);

    const rows = await storedEvents(server.app.knex, 'auth.login', { outcome: 'failure', identity_id: null });
    const named = rows.filter((r) => r.details.username === 'nobody-by-this-name');
    expect(named).toHaveLength(minutesOf(named));
    expect(attemptsOf(named)).toBe(3);
    expect(named[0]).toMatchObject({ details: { reason: 'unknown-username', method: 'password' } });
    const other = rows.filter((r) => r.details.username === 'someone-else-unknown');
    expect(other).toHaveLength(1);
    expect(other[0]!.attempts).toBe(1);
    // The log line keeps its form: no username (a password typed into that field stays out of the log).
    const lines = events().filter((e) => e.event === 'auth.login' && e.reason === 'unknown-username');
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line.username).toBeUndefined();
    expect(JSON.stringify(rows)).not.toContain('Unknown-Secret');
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
