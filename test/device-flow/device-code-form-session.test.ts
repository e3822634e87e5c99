// The code form's posts need the provider's session that the form's GET started (it holds the
// form's XSRF secret). A post without it, e.g. after the cookie expired or from a browser that
// dropped it, is shown the form again in a new stored session, never answered with a 500.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { inputValue } from './device-fixtures.js';

describe('device code form posted without its session', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  test.each([
    ['a code and a stale secret', { xsrf: 'forged', user_code: 'BCDF-GHJK' }],
    ['a code alone', { user_code: 'bcdfghjk' }],
    ['a confirmation', { xsrf: 'x', user_code: 'BCDF-GHJK', confirm: 'yes' }],
    ['fields twice', { xsrf: ['a', 'b'], user_code: ['BCDF-GHJK', 'x'] }],
    ['nothing', {}],
  ])('%s: the form again, on our page, with a new secret in a new session', async (_what, form) => {
    const res = await server.client.post('/oidc/device', { form });

    expect(res.status).toBe(400);
    expect(res.header('content-security-policy')).toContain("default-src 'none'");
    expect(res.text).toContain('This form has expired');
    expect(inputValue(res.text, 'xsrf')).toMatch(/^[\w-]{16,}$/);
    const cookie = res.headerAll('set-cookie').find((c) => c.startsWith('_session='));
    // Sent back only to the form: the provider's session is read nowhere else.
    expect(cookie).toMatch(/; path=\/oidc\/device(;|$)/);
  });
});
