import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startControllerPair, type ControllerPair } from '../helpers/spawn-controller.js';
import { describeWithPostgres } from '../helpers/test-database.js';
import { ADMIN_PASSWORD, ADMIN_USERNAME } from '../helpers/test-server.js';
import { browserLike, csrfOf, signIn } from './account-fixtures.js';

describeWithPostgres('account page on two instances of one deployment', () => {
  let pair: ControllerPair;
  beforeAll(async () => {
    pair = await startControllerPair('svc-account');
  }, 180_000);
  afterAll(() => pair?.close());

  test('a session signed in on one instance is served, refreshed and ended by the other', async () => {
    const onA = browserLike({ baseUrl: pair.a.url, ca: pair.a.ca() });
    const overview = await signIn(onA, ADMIN_USERNAME, ADMIN_PASSWORD);
    expect(overview.text).toContain(`<dd>${ADMIN_USERNAME}</dd>`);
    // The same browser and address, routed to the other instance.
    const onB = browserLike({ baseUrl: pair.a.url, ca: pair.a.ca(), connectPort: pair.b.port, jar: onA.jar });
    const sessions = await onB.get('/account/sessions');
    expect(sessions.status).toBe(200);
    expect(sessions.text).toContain('This browser');
    const out = await onB.post('/account/logout', { csrf: csrfOf(sessions.text) });
    expect(out.text).toContain('You are signed out.');
    onA.jar.set('__Host-svc-account', 'anything');
    const back = await onA.get('/account/sessions');
    expect(back.url).toMatch(/\/account\/$/);
    await onA.close();
    await onB.close();
  }, 60_000);
});
