import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { deleteExpiredOidcPayloads } from '../../src/oidc/oidc-janitor.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

describe('the oidc janitor keeps up with anonymous auth requests', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const count = async (prefix: string) =>
    Number(
      (await server.app.knex('oidc_payloads').where('id', 'like', `${prefix}%`).count({ n: '*' }))[0]!.n,
    );

  test('one pass removes all 20,000 expired rows and keeps the live and the recently expired', async () => {
    const { knex } = server.app;
    await knex.raw(
      `INSERT INTO oidc_payloads (model, id, payload, expires_at)
       SELECT 'Interaction', 'flood-' || g, '{}'::jsonb, now() - interval '1 hour'
       FROM generate_series(1, 20000) AS g`,
    );
    await knex('oidc_payloads').insert([
      { model: 'Interaction', id: 'keep-live', payload: '{}', expires_at: new Date(Date.now() + 600_000) },
      // Within the replay-detection margin: kept for now.
      {
        model: 'AuthorizationCode',
        id: 'keep-recent',
        payload: '{}',
        expires_at: new Date(Date.now() - 60_000),
      },
    ]);
    expect(await count('flood-')).toBe(20_000);

    const deleted = await deleteExpiredOidcPayloads(knex, new Date());

    expect(deleted).toBeGreaterThanOrEqual(20_000);
    expect(await count('flood-')).toBe(0);
    expect(await count('keep-')).toBe(2);
  });
});
