import { afterAll, describe, expect, test } from '@jest/globals';
import type { Knex } from 'knex';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashTokenId } from '../../src/crypto/token-id-hash.js';
import { generateClientKeyAndCsr } from '../../src/crypto/pki.js';
import { passwordLogin, refreshTokens } from '../helpers/oidc-client.js';
import { createTestDatabaseUrl } from '../helpers/test-database.js';
import { startTestServer } from '../helpers/test-server.js';
import {
  CLIENT,
  enrolledUpdbUser,
  identityDetail,
  managementApi,
  pendingEnrollment,
} from '../identities/identity-fixtures.js';

/**
 * Rows written before migrations 005/006 are converted: the rows of one live login are put back
 * in their old form (raw ids, `jti` in the payload, a plain enrollment token), 005 is marked as
 * not run, and a restarted server must still honour the refresh token and the enrollment token.
 */
describe('rows stored in the old, plain form are converted at upgrade', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-migrate-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test('a plain refresh token, its grant and a plain enrollment token still work after the upgrade', async () => {
    const db = await createTestDatabaseUrl();
    const options = { dataDir, databaseUrl: db?.url };
    let refreshToken: string;
    let enrollment: { identityId: string; token: string };
    const first = await startTestServer(options);
    try {
      const api = managementApi(first, await first.adminToken());
      const user = await enrolledUpdbUser(first, api, 'old-rows-user');
      enrollment = await pendingEnrollment(api, 'old-rows-ott', { ott: true });
      refreshToken = (await passwordLogin(first.client, user.username, user.password)).tokens.refresh_token!;
      await downgradeRows(first.app.knex, refreshToken, enrollment.token);
    } finally {
      await first.close();
    }

    const second = await startTestServer(options);
    try {
      const stored = await second.app.knex('oidc_payloads').where({ model: 'RefreshToken' });
      const refreshed = await refreshTokens(second.client, refreshToken);
      const api = managementApi(second, await second.adminToken());
      const shown = (await identityDetail(api, enrollment.identityId)).enrollment.ott.token;
      const { csrPem } = await generateClientKeyAndCsr({ commonName: 'old-rows-ott' });
      const enrolled = await second.client.post(`${CLIENT}/enroll/ott`, {
        body: { token: enrollment.token, clientCsr: csrPem },
      });

      expect(stored.map((r) => r.id)).toEqual([hashTokenId(refreshToken)]);
      expect(JSON.stringify(stored)).not.toContain(refreshToken);
      expect(refreshed.status).toBe(200);
      expect(shown).toBe(enrollment.token);
      expect(enrolled.status).toBe(200);
    } finally {
      await second.close();
      await db?.drop();
    }
  });
});

function withoutIssuer({ issuer: _issuer, ...rest }: Record<string, unknown>): Record<string, unknown> {
  return rest;
}

/** The rows of one login and one enrollment as the code before the upgrade wrote them. */
async function downgradeRows(knex: Knex, refreshToken: string, enrollmentToken: string): Promise<void> {
  const rt = await knex('oidc_payloads')
    .where({ model: 'RefreshToken', id: hashTokenId(refreshToken) })
    .first();
  const grantId = (typeof rt.payload === 'string' ? JSON.parse(rt.payload) : rt.payload).grantId as string;
  const raw = { RefreshToken: refreshToken, Grant: grantId, SvcLogin: grantId } as Record<string, string>;
  for (const [model, id] of Object.entries(raw)) {
    const row = await knex('oidc_payloads')
      .where({ model, id: hashTokenId(id) })
      .first();
    const payload = typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload;
    await knex('oidc_payloads')
      .where({ model, id: hashTokenId(id) })
      .update({
        id,
        grant_id: row.grant_id ? grantId : null,
        // The login facts of that time kept no issuer (the second server's port, and so its
        // issuer, differs from the first's).
        payload: JSON.stringify(model === 'SvcLogin' ? withoutIssuer(payload) : { ...payload, jti: id }),
      });
  }
  await knex('enrollments')
    .where({ method: 'ott' })
    .update({ token: enrollmentToken, token_hash: null, token_sealed: null });
  await knex('knex_migrations').where({ name: '006_hashed_oidc_payload_ids' }).delete();
}
