import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { expectError } from '../helpers/expect-error.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { managementApi } from '../identities/identity-fixtures.js';

describe('an internal failure is answered SERVER_ERROR without internal detail', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test('a route whose table is gone answers 500 SERVER_ERROR with the generic message only', async () => {
    const api = managementApi(server, await server.adminToken());
    expect((await api.get('/external-jwt-signers')).status).toBe(200);
    // A real failure inside the database layer, as a broken schema or a lost table would cause.
    await server.app.knex.raw('DROP TABLE external_jwt_signers CASCADE');

    const res = await api.get('/external-jwt-signers');

    const error = expectError(res, { status: 500, code: 'SERVER_ERROR' });
    expect(error.message).toBe('the server encountered an unexpected error');
    expect(error.cause).toBeUndefined();
    for (const leak of ['external_jwt_signers', 'relation', 'select', 'stack', '.ts:', '.js:', '    at ']) {
      expect(res.text.toLowerCase()).not.toContain(leak);
    }
  });
});
