import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { passwordLogin as oidcLogin, refreshTokens } from '../helpers/oidc-client.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import {
  CLIENT,
  enrolledUpdbUser,
  managementApi,
  type ManagementApi,
} from '../identities/identity-fixtures.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';

const TRIALS = 20;

/**
 * A refresh locks its refresh token, its login's rows and its API session in one statement, in an
 * order no other writer can share; ending the session at that moment can make PostgreSQL end one of
 * the two as a deadlock's victim. Whoever holds a stolen refresh token must not be able to make
 * "end this session" fail by refreshing in a loop: the ending is run again, and the refresh that
 * loses is a retryable 503, never a 500.
 */
describeWithPostgres('ending a session while its refresh token is being used', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    api = managementApi(server, await server.adminToken());
  }, 180_000);
  afterAll(() => server?.close());

  test(`${TRIALS} trials: every ending succeeds and the session's tokens are refused afterwards`, async () => {
    const user = await enrolledUpdbUser(server, api, 'end-during-refresh');
    const refreshAnswers = new Set<number>();
    for (let trial = 0; trial < TRIALS; trial++) {
      const { tokens } = await oidcLogin(server.client, user.username, user.password);
      const sessionId = payloadOf(tokens.access_token).z_asid as string;
      let refreshToken = tokens.refresh_token!;
      let accessToken = tokens.access_token;
      let stop = false;
      const thief = (async () => {
        while (!stop) {
          const res = await refreshTokens(server.client, refreshToken);
          refreshAnswers.add(res.status);
          if (res.status === 400) return;
          if (res.status !== 200) continue;
          refreshToken = res.body.refresh_token;
          accessToken = res.body.access_token;
        }
      })();
      await new Promise((r) => setTimeout(r, 20));
      const ended =
        trial % 2
          ? await api.delete(`/api-sessions/${sessionId}`)
          : await api.delete(`/identities/${user.id}/api-sessions`);
      expect(ended.status).toBe(200);
      stop = true;
      await thief;

      const me = await server.client.get(`${CLIENT}/current-identity`, {
        headers: { authorization: `Bearer ${accessToken}` },
      });
      expect(me.status).toBe(401);
      expect((await refreshTokens(server.client, refreshToken)).status).toBe(400);
    }
    expect([...refreshAnswers].filter((s) => ![200, 400, 503].includes(s))).toEqual([]);
  }, 300_000);
});
