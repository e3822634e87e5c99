import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { authorizationPath, newPkce } from '../helpers/oidc-client.js';

describe('per-address limits on the OIDC login and token endpoints', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      env: {
        SVC_RATE_LIMITS_ENABLED: 'true',
        SVC_RATE_LIMITS_PER_SECOND: '1',
        SVC_RATE_LIMITS_BURST: '3',
        SVC_RATE_LIMITS_AUTHORIZATION_PER_SECOND: '1',
        SVC_RATE_LIMITS_AUTHORIZATION_BURST: '2',
      },
    });
  });
  afterAll(() => server.close());

  test('past the burst, /oidc/token answers 429 temporarily_unavailable and the login endpoints RATE_LIMITED', async () => {
    const token = () =>
      server.client.post('/oidc/token', {
        form: { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'svc' },
      });

    const within = [await token(), await token(), await token()];
    const over = await token();
    const login = await server.client.post('/oidc/login/username', { body: { authRequestId: 'x' } });

    expect(within.map((r) => r.status)).toEqual([400, 400, 400]);
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
    expect(Number(over.header('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(login.status).toBe(429);
    expect(login.body.error.code).toBe('RATE_LIMITED');
    expect(login.header('retry-after')).toBeDefined();
  });

  test('past its own burst, /oidc/authorization answers 429 temporarily_unavailable and stores nothing more', async () => {
    const authorize = () =>
      server.client.get(authorizationPath({ method: 'password' }, newPkce(), 'state', 'nonce'));
    const stored = async () =>
      Number(
        (await server.app.knex('oidc_payloads').where({ model: 'Interaction' }).count({ n: '*' }))[0]!.n,
      );

    const before = await stored();
    const within = [await authorize(), await authorize()];
    const over = await authorize();

    expect(within.map((r) => r.status)).toEqual([303, 303]);
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
    expect(Number(over.header('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await stored()).toBe(before + 2);
  });
});
