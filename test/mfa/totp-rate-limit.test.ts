import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectError } from '../helpers/expect-error.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { createUser, login, sessionOf, type TestUser } from './mfa-fixtures.js';

const CLIENT = '/edge/client/v1';

describe('the TOTP failure limit on authenticate/mfa', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  /** A user with verified TOTP (verified with the code of `step`) and a session owing the MFA step. */
  async function pendingUser(name: string) {
    const user: TestUser = await createUser(server, name);
    const setup = await sessionOf(server, user);
    const url = (await server.client.post(`${CLIENT}/current-identity/mfa`, { headers: setup })).body.data
      .provisioningUrl as string;
    const step = timeStepAt();
    await server.client.post(`${CLIENT}/current-identity/mfa/verify`, {
      headers: setup,
      body: { code: await totpCode(url, step) },
    });
    const res = await login(server, user);
    expect(res.body.data.isMfaRequired).toBe(true);
    // A code far outside the ±1 step window: well-formed and wrong.
    const wrong = await totpCode(url, step + 10);
    return { headers: { 'svc-session': res.body.data.token as string }, url, step, wrong };
  }

  const mfa = (headers: Record<string, string>, code: string) =>
    server.client.post(`${CLIENT}/authenticate/mfa`, { headers, body: { code } });

  test('after five wrong codes even a correct code gets 429 RATE_LIMITED with Retry-After', async () => {
    const { headers, url, step, wrong } = await pendingUser('limited');

    const failures = [];
    for (let i = 0; i < 5; i++) failures.push(await mfa(headers, wrong));
    const correct = await mfa(headers, await totpCode(url, step + 1));

    for (const f of failures) expect(f.body.error.code).toBe('MFA_INVALID_TOKEN');
    expect(correct.status).toBe(429);
    expect(correct.body.error.code).toBe('RATE_LIMITED');
    const retryAfter = Number(correct.header('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(900);
    expect((await server.client.get(`${CLIENT}/current-identity`, { headers })).status).toBe(401);
  });

  test('the limit also covers confirming an enrollment: five wrong codes, then 429 even for the right one', async () => {
    const user: TestUser = await createUser(server, 'enroll guesser');
    const headers = await sessionOf(server, user);
    const url = (await server.client.post(`${CLIENT}/current-identity/mfa`, { headers })).body.data
      .provisioningUrl as string;
    const step = timeStepAt();
    const verify = (code: string) =>
      server.client.post(`${CLIENT}/current-identity/mfa/verify`, { headers, body: { code } });

    for (let i = 0; i < 5; i++) expect((await verify(await totpCode(url, step + 10))).status).toBe(400);
    const correct = await verify(await totpCode(url, step));

    expect(correct.status).toBe(429);
    expect(correct.body.error.code).toBe('RATE_LIMITED');
    expect(
      (await server.client.get(`${CLIENT}/current-identity/mfa`, { headers })).body.data.isVerified,
    ).toBe(false);
  });

  test('twenty parallel wrong codes are checked five times; the rest are refused unchecked', async () => {
    const { headers, wrong } = await pendingUser('parallel guesser');

    const results = await Promise.all(Array.from({ length: 20 }, () => mfa(headers, wrong)));

    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 400)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
  });

  test('the limit is per identity: another identity is not affected', async () => {
    const a = await pendingUser('limited a');
    const b = await pendingUser('unaffected b');

    for (let i = 0; i < 6; i++) await mfa(a.headers, a.wrong);
    const limited = await mfa(a.headers, await totpCode(a.url, a.step + 1));
    const other = await mfa(b.headers, await totpCode(b.url, b.step + 1));

    // Control: the limit did apply to the first identity, so the second one's 200 means something.
    expectError(limited, { status: 429, code: 'RATE_LIMITED' });
    expect(other.status).toBe(200);
  });
});
