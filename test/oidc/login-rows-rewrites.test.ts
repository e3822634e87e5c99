import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { decodeJwt } from 'jose';
import { loginRowsRepository } from '../../src/repositories/login-rows-repository.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import { passwordLogin } from '../helpers/oidc-client.js';

/** The row version (xmin) and end of the Grant, the login facts and the API session of one login. */
async function loginRows(server: TestServer, apiSessionId: string) {
  const { knex } = server.app;
  const facts = await knex('oidc_payloads').where({ model: 'SvcLogin', uid: apiSessionId }).first('id');
  const own = await knex('oidc_payloads')
    .whereIn('model', ['Grant', 'SvcLogin'])
    .andWhere({ id: facts.id })
    .orderBy('model')
    .select(knex.raw('model, xmin::text AS version, expires_at'));
  const session = await knex('api_sessions')
    .where({ id: apiSessionId })
    .select(knex.raw("'api_sessions' AS model, xmin::text AS version, expires_at"));
  return [...own, ...session].map((r) => ({
    model: r.model as string,
    version: r.version as string,
    end: new Date(r.expires_at).getTime(),
  }));
}

describe('the end of a login rows moves later only by writing the rows it moves', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test('a consume whose end is earlier than the rows end leaves them as they are; a later end moves all three', async () => {
    const { tokens } = await passwordLogin(server.client, ADMIN_USERNAME, ADMIN_PASSWORD);
    const asid = decodeJwt(tokens.access_token).z_asid as string;
    const before = await loginRows(server, asid);
    expect(before.map((r) => r.model)).toEqual(['Grant', 'SvcLogin', 'api_sessions']);

    // As in a refresh: its access token ends long before the refresh chain the rows already cover.
    const earlier = new Date(Math.min(...before.map((r) => r.end)) - 60_000);
    const consumed = await loginRowsRepository.consumeAndExtend(
      server.app.knex,
      'RefreshToken',
      tokens.refresh_token!,
      new Date(),
      earlier,
    );
    expect(consumed).toBe(true);
    expect(await loginRows(server, asid)).toEqual(before);

    const later = new Date(Math.max(...before.map((r) => r.end)) + 3_600_000);
    const upserted = { model: 'RefreshToken', id: 'successor-of-a-test', payload: { kind: 'RefreshToken' } };
    // The login facts carry the grant id the provider gave this login.
    const facts = await server.app
      .knex('oidc_payloads')
      .where({ model: 'SvcLogin', uid: asid })
      .first('payload');
    const rawGrantId = (typeof facts.payload === 'string' ? JSON.parse(facts.payload) : facts.payload)
      .grantId;
    await loginRowsRepository.upsertAndExtend(server.app.knex, { ...upserted, grantId: rawGrantId }, later);
    const after = await loginRows(server, asid);
    expect(after.map((r) => r.end)).toEqual([later.getTime(), later.getTime(), later.getTime()]);
  });
});
