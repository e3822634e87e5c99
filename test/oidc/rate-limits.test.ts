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

describe('the resume path /oidc/authorization/<uid> spends the authorization budget', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      env: {
        SVC_RATE_LIMITS_ENABLED: 'true',
        SVC_RATE_LIMITS_AUTHORIZATION_PER_SECOND: '1',
        SVC_RATE_LIMITS_AUTHORIZATION_BURST: '4',
      },
    });
  });
  afterAll(() => server.close());

  /** What a browser sends back to `/oidc/authorization/<uid>`: the live cookies scoped to that path. */
  const resumeCookies = (res: { headerAll(name: string): string[] }, uid: string) =>
    res
      .headerAll('set-cookie')
      .filter((c) => c.includes(`path=/oidc/authorization/${uid};`) && !c.includes('1970'))
      .map((c) => c.split(';')[0]!)
      .join('; ');
  const uidOf = (res: { header(name: string): string | undefined }) =>
    new URL(res.header('location') ?? '', server.url).searchParams.get('authRequestID')!;

  test('resumes with the cookies returned count against the same budget: then 429 temporarily_unavailable, for the authorization endpoint and any uid too', async () => {
    const first = await server.client.get(authorizationPath({ method: 'password' }, newPkce(), 's', 'n'));
    const resumes = [];
    let last = first;
    for (let i = 0; i < 4; i++) {
      const uid = uidOf(last);
      last = await server.client.get(`/oidc/authorization/${uid}`, {
        headers: { cookie: resumeCookies(last, uid) },
      });
      resumes.push(last);
    }
    const authorize = await server.client.get(authorizationPath({ method: 'password' }, newPkce(), 's', 'n'));
    const unknown = await server.client.get('/oidc/authorization/no-such-auth-request');

    expect(first.status).toBe(303);
    // Each resume of an unfinished login starts it over: a new auth request, 303 to its login page.
    expect(resumes.slice(0, 3).map((r) => r.status)).toEqual([303, 303, 303]);
    const over = resumes[3]!;
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
    expect(Number(over.header('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(authorize.status).toBe(429);
    expect(unknown.status).toBe(429);
    expect(unknown.body.error).toBe('temporarily_unavailable');
  });
});
