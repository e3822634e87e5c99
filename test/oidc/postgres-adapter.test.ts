import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createCompletedLogins } from '../../src/oidc/completed-logins.js';
import { createPostgresAdapter } from '../../src/oidc/postgres-adapter.js';
import { oidcPayloadsRepository } from '../../src/repositories/oidc-payloads-repository.js';
import { hashTokenId } from '../../src/crypto/token-id-hash.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';

describe('the oidc-provider adapter over oidc_payloads', () => {
  let server: TestServer;
  const destroyedGrants: string[] = [];
  let Adapter: ReturnType<typeof createPostgresAdapter>;
  beforeAll(async () => {
    server = await startTestServer();
    Adapter = createPostgresAdapter({
      knex: server.app.knex,
      onGrantDestroyed: async (id) => {
        destroyedGrants.push(id);
      },
      completedLogins: createCompletedLogins(),
      accessTokenSeconds: 1800,
    });
  });
  afterAll(() => server.close());

  test('consume is atomic: of 16 parallel consumers exactly one wins, the others get invalid_grant', async () => {
    const codes = new Adapter('AuthorizationCode');
    await codes.upsert('code-1', { grantId: 'g-1', accountId: 'a-1' }, 60);

    const results = await Promise.allSettled(Array.from({ length: 16 }, () => codes.consume('code-1')));

    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const losers = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(losers).toHaveLength(15);
    for (const l of losers) expect(l.reason.error).toBe('invalid_grant');
    expect((await codes.find('code-1'))!.consumed).toEqual(expect.any(Number));
  });

  test('expired rows are not found; revokeByGrantId removes only that model of that grant', async () => {
    const tokens = new Adapter('RefreshToken');
    const codes = new Adapter('AuthorizationCode');
    await tokens.upsert('rt-live', { grantId: 'g-2' }, 60);
    await codes.upsert('code-2', { grantId: 'g-2' }, 60);
    await server.app.knex('oidc_payloads').insert({
      model: 'RefreshToken',
      id: 'rt-old',
      payload: '{}',
      expires_at: new Date(Date.now() - 1000),
    });

    const expired = await tokens.find('rt-old');
    await tokens.revokeByGrantId('g-2');

    expect(expired).toBeUndefined();
    expect(await tokens.find('rt-live')).toBeUndefined();
    expect(await codes.find('code-2')).toEqual({ grantId: 'g-2', jti: 'code-2' });
  });

  test('destroying a Grant reports it (its API session is revoked there); findByUid takes the newest', async () => {
    const grants = new Adapter('Grant');
    const byUid = new Adapter('BackchannelAuthenticationRequest');
    await grants.upsert('grant-x', { accountId: 'a' }, 60);
    await byUid.upsert('s-old', { uid: 'same-uid', accountId: 'old' }, 30);
    await byUid.upsert('s-new', { uid: 'same-uid', accountId: 'new' }, 60);

    await grants.destroy('grant-x');

    expect(destroyedGrants).toEqual(['grant-x']);
    expect(await grants.find('grant-x')).toBeUndefined();
    expect((await byUid.findByUid('same-uid'))!.accountId).toBe('new');
  });

  test("the provider's Session is never stored; one stored before is still found", async () => {
    const sessions = new Adapter('Session');
    await sessions.upsert('s-1', { uid: 'uid-1', accountId: 'a' }, 60);
    await server.app.knex('oidc_payloads').insert({
      model: 'Session',
      id: hashTokenId('s-0'),
      uid: 'uid-0',
      payload: JSON.stringify({ uid: 'uid-0', accountId: 'a' }),
      expires_at: new Date(Date.now() + 60_000),
    });

    expect(await sessions.find('s-1')).toBeUndefined();
    expect(await sessions.findByUid('uid-1')).toBeUndefined();
    expect((await sessions.findByUid('uid-0'))!.accountId).toBe('a');
  });

  test('a row is keyed by the hash of its id and its payload holds no copy of it; find restores them', async () => {
    const interactions = new Adapter('Interaction');
    const id = 'interaction-id-0123456789abcdef';
    const returnTo = `https://issuer.example/oidc/auth/${id}`;
    await interactions.upsert(
      id,
      { jti: id, returnTo, session: { uid: 'sid-1', cookie: 'session-cookie-secret', accountId: 'a' } },
      60,
    );

    const rows = await server.app.knex('oidc_payloads').where({ model: 'Interaction' });
    const found = await interactions.find(id);

    expect(JSON.stringify(rows)).not.toContain(id);
    expect(JSON.stringify(rows)).not.toContain('session-cookie-secret');
    expect(rows.map((r) => r.id)).toEqual([hashTokenId(id)]);
    expect(found).toEqual({ jti: id, returnTo, session: { uid: 'sid-1', accountId: 'a' } });
  });

  test('ids with control characters or of no plausible shape are simply not found', async () => {
    const codes = new Adapter('AuthorizationCode');
    const sessions = new Adapter('Session');

    const found = await Promise.all([
      codes.find('abc\u0000def'),
      codes.find('tab\there'),
      codes.find('x'.repeat(4096)),
      codes.find(''),
      sessions.findByUid('u\u0000'),
      new Adapter('DeviceCode').findByUserCode('c\u0000'),
    ]);

    expect(found).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
  });

  test('the janitor deletes expired rows in bounded batches', async () => {
    const past = new Date(Date.now() - 3600_000);
    const rows = Array.from({ length: 1200 }, (_, i) => ({
      model: 'Session',
      id: `expired-${i}`,
      payload: '{}',
      expires_at: past,
    }));
    await server.app.knex.batchInsert('oidc_payloads', rows, 300);

    const first = await oidcPayloadsRepository.deleteExpired(server.app.knex, new Date(), 500);
    const second = await oidcPayloadsRepository.deleteExpired(server.app.knex, new Date(), 500);
    const third = await oidcPayloadsRepository.deleteExpired(server.app.knex, new Date(), 500);

    expect([first, second]).toEqual([500, 500]);
    expect(third).toBeGreaterThanOrEqual(200);
    const left = await server.app
      .knex('oidc_payloads')
      .where('id', 'like', 'expired-%')
      .count('* as n')
      .first();
    expect(Number(left!.n)).toBe(0);
  });
});
