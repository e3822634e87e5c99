import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { hashTokenId } from '../../src/crypto/token-id-hash.js';
import { oidcPayloadsRepository } from '../../src/repositories/oidc-payloads-repository.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { createUser, enrollTotp, partialLogin, postTotp } from './factor-fixtures.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

// Two steps of one auth request in flight: a password step resubmitted (slow: Argon2id), which
// still owes TOTP and saves the auth request when it ends, and the TOTP step, which completes it
// first. The late save must not bring the completed auth request back for a second completion.
test('a step that saves the auth request after another step completed it cannot revive it', async () => {
  const user = await createUser(server, 'late-save');
  const { recoveryCodes } = await enrollTotp(server, user);
  const { started, response } = await partialLogin(server.client, user);
  expect(response.status).toBe(200);
  const uid = started.authRequestId;
  const row = await server.app
    .knex('oidc_payloads')
    .where({ model: 'Interaction', id: hashTokenId(uid) })
    .first('payload', 'uid', 'expires_at');

  const completed = await postTotp(server.client, uid, recoveryCodes[0]!);
  expect(completed.status).toBe(303);
  // What the slower step's save writes: the auth request as that step loaded it.
  await oidcPayloadsRepository.upsert(server.app.knex, {
    model: 'Interaction',
    id: uid,
    payload: typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload,
    uid: row.uid,
    expiresAt: row.expires_at,
  });

  const again = await postTotp(server.client, uid, recoveryCodes[1]!);
  expect(again.status).toBe(400);
  expect(again.body.error.code).toBe('INVALID_AUTH_REQUEST');
  expect(again.header('location')).toBeUndefined();
});
