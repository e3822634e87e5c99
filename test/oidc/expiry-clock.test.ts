import { afterAll, afterEach, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  exchangeCode,
  followToCallback,
  passwordLogin,
  refreshTokens,
  startAuthorization,
  submitLogin,
} from '../helpers/oidc-client.js';
import { expectError } from '../helpers/expect-error.js';
import { clockAt, SHORT_OIDC_LIFETIMES, startClock } from '../helpers/movable-clock.js';

// The clock is moved, not waited for (test/helpers/movable-clock.ts explains how and why).

const admin = { username: ADMIN_USERNAME, password: ADMIN_PASSWORD };

describe('expiry of auth requests, codes, refresh tokens and refresh chains (docs/operations.md)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      env: SHORT_OIDC_LIFETIMES,
    });
  });
  afterEach(() => {
    jest.useRealTimers();
  });
  afterAll(() => server.close());

  test('an auth request can be used for 10 minutes and not after', async () => {
    startClock();
    const fresh = await startAuthorization(server.client, { method: 'password' });
    const stale = await startAuthorization(server.client, { method: 'password' });

    clockAt(590);
    const inTime = await submitLogin(server.client, fresh, { body: admin });
    clockAt(601);
    const late = await submitLogin(server.client, stale, { body: admin });

    expect(inTime.status).toBe(303);
    expectError(late, { status: 400, code: 'INVALID_AUTH_REQUEST' });
  });

  test('an authorization code can be exchanged for 60 seconds and not after', async () => {
    startClock();
    const codes = [];
    for (let i = 0; i < 2; i++) {
      const started = await startAuthorization(server.client, { method: 'password' });
      const login = await submitLogin(server.client, started, { body: admin });
      codes.push({ ...(await followToCallback(server.client, login)), verifier: started.pkce.verifier });
    }

    clockAt(55);
    const inTime = await exchangeCode(server.client, codes[0]!);
    clockAt(61);
    const late = await exchangeCode(server.client, codes[1]!);

    expect(inTime.status).toBe(200);
    expect(late.status).toBe(400);
    expect(late.body.error).toBe('invalid_grant');
  });

  test('a refresh token is refused once its own duration has passed', async () => {
    startClock();
    const a = (await passwordLogin(server.client, admin.username, admin.password)).tokens;
    const b = (await passwordLogin(server.client, admin.username, admin.password)).tokens;

    clockAt(3600 - 30);
    const inTime = await refreshTokens(server.client, a.refresh_token!);
    clockAt(3600 + 1);
    const late = await refreshTokens(server.client, b.refresh_token!);
    const rotated = await refreshTokens(server.client, inTime.body.refresh_token);

    expect(inTime.status).toBe(200);
    expect(late.status).toBe(400);
    expect(late.body.error).toBe('invalid_grant');
    // The chain itself lives on: the token issued at 59m30s is good for another hour.
    expect(rotated.status).toBe(200);
  });

  test('maxSessionDuration ends a refresh chain even while its newest refresh token is within its own duration', async () => {
    startClock();
    let rt = (await passwordLogin(server.client, admin.username, admin.password)).tokens.refresh_token!;

    for (const at of [50 * 60, 100 * 60]) {
      clockAt(at);
      const refreshed = await refreshTokens(server.client, rt);
      expect(refreshed.status).toBe(200);
      rt = refreshed.body.refresh_token;
    }
    // Issued at 1h40m with a 1h duration, but the chain started 2h ago.
    clockAt(2 * 3600 + 1);
    const late = await refreshTokens(server.client, rt);

    expect(late.status).toBe(400);
    expect(late.body.error).toBe('invalid_grant');
  });
});
