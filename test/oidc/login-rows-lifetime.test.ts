import { afterAll, afterEach, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { deleteExpiredOidcPayloads } from '../../src/oidc/oidc-janitor.js';
import { deleteExpiredRows } from '../../src/services/janitor.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  followToCallback,
  passwordLogin,
  refreshTokens,
  startAuthorization,
  submitLogin,
} from '../helpers/oidc-client.js';
import { clockAt, clockTime, SHORT_OIDC_LIFETIMES, startClock } from '../helpers/movable-clock.js';

// The clock is moved, not waited for (test/helpers/movable-clock.ts explains how and why).

const admin = { username: ADMIN_USERNAME, password: ADMIN_PASSWORD };
const MINUTE = 60;
const HOUR = 3600;

/**
 * Every row one login keeps, by model, with the seconds left until it ends, counted from `at`
 * seconds after startClock() and rounded to 10 s: the provider's rows of its grant (found by the
 * grant id the login facts carry), the API session, and every provider Session in the table (no
 * login should leave one).
 */
async function rowsOfLogin(server: TestServer, apiSessionId: string, at: number) {
  const { knex } = server.app;
  const now = clockTime(at);
  const left = (d: Date | string) => Math.round((new Date(d).getTime() - now) / 10_000) * 10;
  const facts = await knex('oidc_payloads').where({ model: 'SvcLogin', uid: apiSessionId }).first('grant_id');
  const rows: { model: string; expires_at: Date }[] = facts
    ? await knex('oidc_payloads')
        .where({ grant_id: facts.grant_id })
        .orWhere({ model: 'Grant', id: facts.grant_id })
        .orWhere({ model: 'Session' })
        .select('model', 'expires_at')
    : await knex('oidc_payloads').where({ model: 'Session' }).select('model', 'expires_at');
  const sessions = await knex('api_sessions').where({ id: apiSessionId }).select('expires_at');
  const out: Record<string, number[]> = {};
  for (const r of [...rows, ...sessions.map((s) => ({ model: 'api_sessions', ...s }))]) {
    (out[r.model] ??= []).push(left(r.expires_at));
  }
  for (const list of Object.values(out)) list.sort((a, b) => a - b);
  return out;
}

const asidOf = (accessToken: string) => decodeJwt(accessToken).z_asid as string;

/** The API session of the newest login (its code may never be exchanged, so no token names it). */
async function newestApiSession(server: TestServer): Promise<string> {
  const row = await server.app
    .knex('api_sessions')
    .where({ kind: 'oidc' })
    .orderBy('created_at', 'desc')
    .first('id');
  return row.id;
}

/**
 * The rows an OIDC login keeps, and how long (docs/architecture.md, "Lifetime of an OIDC API
 * session"): with an access token of 5m, refresh tokens of 1h and a refresh chain of at most 2h.
 */
describe('the rows of an OIDC login end with its code, its access token or its refresh chain', () => {
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

  test('without offline_access: grant, facts and API session end with the access token; no Session is stored', async () => {
    startClock();
    const { tokens } = await passwordLogin(server.client, admin.username, admin.password, {
      scope: 'openid',
    });

    expect(tokens.refresh_token).toBeUndefined();
    expect(await rowsOfLogin(server, asidOf(tokens.access_token), 0)).toEqual({
      AuthorizationCode: [1 * MINUTE], // consumed; kept until it expires to detect a replay
      Grant: [5 * MINUTE],
      SvcLogin: [5 * MINUTE],
      api_sessions: [5 * MINUTE],
    });
  });

  test('with offline_access: they end with the refresh chain, follow each rotation, and stop at maxSessionDuration', async () => {
    startClock();
    const { tokens } = await passwordLogin(server.client, admin.username, admin.password);
    const asid = asidOf(tokens.access_token);
    const chainRows = async (at: number) => {
      const {
        AuthorizationCode: _code,
        RefreshToken: refreshTokens,
        ...rest
      } = await rowsOfLogin(server, asid, at);
      return { newestRefreshToken: Math.max(...refreshTokens!), ...rest };
    };

    expect(await chainRows(0)).toEqual({
      newestRefreshToken: HOUR,
      Grant: [HOUR],
      SvcLogin: [HOUR],
      api_sessions: [HOUR],
    });

    // A rotation half-way: the chain (and every row) now ends an hour after it.
    clockAt(30 * MINUTE);
    let refreshed = await refreshTokens(server.client, tokens.refresh_token!);
    expect(refreshed.status).toBe(200);
    expect(await chainRows(30 * MINUTE)).toEqual({
      newestRefreshToken: HOUR,
      Grant: [HOUR],
      SvcLogin: [HOUR],
      api_sessions: [HOUR],
    });

    // Near the chain's 2h cap a new refresh token gets only what is left of it.
    clockAt(80 * MINUTE);
    refreshed = await refreshTokens(server.client, refreshed.body.refresh_token);
    expect(refreshed.status).toBe(200);
    expect(await chainRows(80 * MINUTE)).toEqual({
      newestRefreshToken: 40 * MINUTE,
      Grant: [40 * MINUTE],
      SvcLogin: [40 * MINUTE],
      api_sessions: [40 * MINUTE],
    });

    // Two minutes before the cap: the refresh token gets those two minutes, its access token five,
    // and the rows last as long as the access token.
    clockAt(118 * MINUTE);
    refreshed = await refreshTokens(server.client, refreshed.body.refresh_token);
    expect(refreshed.status).toBe(200);
    expect(await chainRows(118 * MINUTE)).toEqual({
      newestRefreshToken: 2 * MINUTE,
      Grant: [5 * MINUTE],
      SvcLogin: [5 * MINUTE],
      api_sessions: [5 * MINUTE],
    });
  });

  test('a code never exchanged leaves nothing behind once it has expired', async () => {
    startClock();
    const started = await startAuthorization(server.client, { method: 'password' });
    const login = await submitLogin(server.client, started, { body: admin });
    await followToCallback(server.client, login);
    const asid = await newestApiSession(server);

    // The code's minute, plus a few seconds: the rows are written just before the code.
    expect(await rowsOfLogin(server, asid, 0)).toEqual({
      AuthorizationCode: [1 * MINUTE],
      Grant: [70],
      SvcLogin: [70],
      api_sessions: [70],
    });

    // The janitors keep a consumed code 5 minutes past its end (replay detection); then one pass each.
    clockAt(7 * MINUTE);
    await deleteExpiredOidcPayloads(server.app.knex, new Date());
    await deleteExpiredRows(server.app.knex, new Date());
    expect(await rowsOfLogin(server, asid, 7 * MINUTE)).toEqual({});
  });
});
