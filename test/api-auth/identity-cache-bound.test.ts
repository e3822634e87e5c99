import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createIdentityContextCache } from '../../src/services/identity-context.js';
import { createIdentity, managementApi, type ManagementApi } from '../identities/identity-fixtures.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';

/**
 * The identities a bearer request reads are kept in memory; however many identities call, only
 * the most recently loaded stay. Renaming rows behind the cache's back shows which entries it
 * still holds (a kept entry answers with the old name, a dropped one is read again).
 */
describe('the identity cache of bearer requests is bounded', () => {
  let server: TestServer;
  let api: ManagementApi;
  beforeAll(async () => {
    server = await startTestServer();
    const login = await server.client.post('/edge/client/v1/authenticate?method=password', {
      body: { username: ADMIN_USERNAME, password: ADMIN_PASSWORD },
    });
    api = managementApi(server, login.body.data.token as string);
  });
  afterAll(() => server.close());

  const renameBehindTheCache = (id: string, name: string) =>
    server.app.knex('identities').where({ id }).update({ name });

  test('with room for two, the third identity loaded drops the first', async () => {
    const ids: string[] = [];
    for (const name of ['cache-a', 'cache-b', 'cache-c'])
      ids.push(await createIdentity(api, { name, isAdmin: false }));
    const [a, b, c] = ids as [string, string, string];
    const cache = createIdentityContextCache({ knex: server.app.knex, maxEntries: 2 });
    for (const id of ids) await cache.get(id);

    await renameBehindTheCache(a, 'cache-a2');
    await renameBehindTheCache(b, 'cache-b2');
    expect((await cache.get(b))!.name).toBe('cache-b'); // still held
    expect((await cache.get(a))!.name).toBe('cache-a2'); // dropped, read again, and now held…
    expect((await cache.get(b))!.name).toBe('cache-b2'); // …in place of b, the oldest then
    expect((await cache.get(c))!.name).toBe('cache-c');
  });

  test('a load under way when its identity changes is not kept', async () => {
    const id = await createIdentity(api, { name: 'cache-d', isAdmin: false });
    const cache = createIdentityContextCache({ knex: server.app.knex });
    const pending = cache.get(id);
    cache.invalidate(id);
    expect((await pending)!.name).toBe('cache-d');
    await renameBehindTheCache(id, 'cache-d2');
    expect((await cache.get(id))!.name).toBe('cache-d2');
  });
});
