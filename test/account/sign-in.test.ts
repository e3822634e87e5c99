import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTestServer, ADMIN_PASSWORD, ADMIN_USERNAME, type TestServer } from '../helpers/test-server.js';
import { browserLike, csrfOf, signIn } from './account-fixtures.js';

describe('account page sign-in', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  test('a person signs in with a password on the login page and sees their identity', async () => {
    const browser = browserLike(server);
    const start = await browser.get('/account/');
    expect(start.status).toBe(200);
    expect(start.text).toContain('Sign in');
    const overview = await signIn(browser, ADMIN_USERNAME, ADMIN_PASSWORD);
    expect(overview.visited).toEqual(expect.arrayContaining(['GET /account/callback', 'GET /account/']));
    expect(overview.text).toContain(ADMIN_USERNAME);
    expect(csrfOf(overview.text)).toBeTruthy();
  });
});
