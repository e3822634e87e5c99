// The device authorization grant across two controller processes on one PostgreSQL database, as
// replicas behind one address: each process also answers for the other's address, so a request
// may reach either. The poll state (last poll, interval) and the device code live in the database.
import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { createHttpsClient, type HttpsClient } from '../helpers/https-client.js';
import { refreshTokens } from '../helpers/oidc-client.js';
import {
  startControllerPair,
  type ControllerPair,
  type SpawnedController,
} from '../helpers/spawn-controller.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import { waitFor } from '../helpers/wait-for.js';
import { payloadOf } from '../oidc/oidc-fixtures.js';
import { cookieJar, headingOf, personSignsIn, pollOnce } from './device-fixtures.js';

jest.setTimeout(240_000);

const ADMIN = { username: 'admin', password: 'admin-password-1' };
/** A poll this long after the previous one keeps the 5 s interval (the rule allows 1 s less). */
const INTERVAL_MS = 5_200;

describeWithPostgres('device authorization grant on two controller processes', () => {
  let pair: ControllerPair;
  let a: SpawnedController;
  let b: SpawnedController;
  /** Requests for A's address, reaching A; and the same address reaching B. */
  let onA: HttpsClient;
  let onB: HttpsClient;

  beforeAll(async () => {
    pair = await startControllerPair('svc-device');
    ({ a, b } = pair);
    onA = createHttpsClient(a.url, { ca: a.ca() });
    onB = createHttpsClient(a.url, { ca: a.ca(), connectPort: b.port });
  });

  afterAll(async () => {
    await Promise.all([onA?.close(), onB?.close()]);
    await pair?.close();
  });

  const me = (client: HttpsClient, accessToken: string) =>
    client.get('/edge/client/v1/current-identity', { headers: { authorization: `Bearer ${accessToken}` } });

  test('started on A, confirmed on B, polled on A and B in turn: one token set, valid on both; a replay on B revokes it on both', async () => {
    const started = await onA.post('/oidc/device/auth', {
      form: { client_id: 'svc', scope: 'openid offline_access' },
    });
    expect(started.status).toBe(200);
    const { device_code: deviceCode, verification_uri_complete: link } = started.body;
    expect(link).toBe(`${a.url}/oidc/device?user_code=${encodeURIComponent(started.body.user_code)}`);

    // A's poll is known to B at once: polling B right after it is too early.
    const first = await pollOnce(onA, deviceCode);
    const early = await pollOnce(onB, deviceCode);
    expect([first.status, first.body.error]).toEqual([400, 'authorization_pending']);
    expect([early.status, early.body.error]).toEqual([400, 'slow_down']);

    // From now on 10 s between polls; B, in its turn, after them.
    await sleep(2 * INTERVAL_MS);
    const pending = await pollOnce(onB, deviceCode);
    expect([pending.status, pending.body.error]).toEqual([400, 'authorization_pending']);

    // The person's phone reaches B for the whole of its side.
    const done = await personSignsIn(cookieJar(onB), link, ADMIN);
    expect(headingOf(done.text)).toBe('Device signed in');

    await sleep(2 * INTERVAL_MS);
    const issued = await pollOnce(onA, deviceCode);
    expect(issued.status).toBe(200);
    const tokens = issued.body;
    expect(payloadOf(tokens.access_token)).toMatchObject({ z_t: 'a', amr: ['pwd'] });
    expect(tokens.refresh_token).toEqual(expect.any(String));

    // The one token set works on both processes, refresh included.
    expect((await me(onA, tokens.access_token)).body.data.name).toBe('admin');
    expect((await me(onB, tokens.access_token)).body.data.name).toBe('admin');
    const sessions = await onB.get('/edge/client/v1/current-identity/api-sessions', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    const mine = sessions.body.data.filter(
      (s: { id: string }) => s.id === payloadOf(tokens.access_token).z_asid,
    );
    expect(mine).toEqual([expect.objectContaining({ kind: 'oidc', ipAddress: '127.0.0.1' })]);
    const refreshed = await refreshTokens(onB, tokens.refresh_token);
    expect(refreshed.status).toBe(200);
    expect((await me(onA, refreshed.body.access_token)).status).toBe(200);

    // B in its turn again: the code was used on A, so this is a replay.
    await sleep(2 * INTERVAL_MS);
    const replay = await pollOnce(onB, deviceCode);
    expect([replay.status, replay.body.error]).toEqual([400, 'invalid_grant']);
    for (const client of [onA, onB])
      await waitFor(async () => (await me(client, refreshed.body.access_token)).status === 401, {
        timeout: 15_000,
        what: 'the tokens of a replayed device code refused on both processes',
      });
    expect((await refreshTokens(onA, refreshed.body.refresh_token)).body.error).toBe('invalid_grant');
  });

  // The winner read the code with its grant and facts before its consume: a loser that finds the
  // code used revokes the grant, and the winner still answers (its tokens then revoked, as for a
  // replayed authorization code). Several trials, since the interleaving differs each time.
  test('parallel polls of one confirmed device code on A and B give exactly one token set', async () => {
    for (let trial = 0; trial < 5; trial++) {
      const started = await onB.post('/oidc/device/auth', {
        form: { client_id: 'svc', scope: 'openid offline_access' },
      });
      const done = await personSignsIn(cookieJar(onA), started.body.verification_uri_complete, ADMIN);
      expect(headingOf(done.text)).toBe('Device signed in');

      const polls = await Promise.all(
        Array.from({ length: 8 }, (_, i) => pollOnce(i % 2 ? onA : onB, started.body.device_code)),
      );

      expect(polls.filter((p) => p.status === 200)).toHaveLength(1);
      for (const lost of polls.filter((p) => p.status !== 200)) {
        expect(lost.status).toBe(400);
        expect(['invalid_grant', 'slow_down']).toContain(lost.body.error);
      }
    }
  }, 60_000);
});
