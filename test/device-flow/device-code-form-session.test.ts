// The code form's posts need the provider's session that the form's GET started (it holds the
// form's XSRF secret). A post without it, e.g. after the cookie expired or from a browser that
// dropped it, is sent back to the form, never answered with a 500.
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ADMIN_PASSWORD, ADMIN_USERNAME, startTestServer, type TestServer } from '../helpers/test-server.js';
import {
  cookieJar,
  headingOf,
  inputValue,
  personSignsIn,
  startDevice,
  deviceClient,
} from './device-fixtures.js';

describe('device code form posted without its session', () => {
  let server: TestServer;
  let device: Awaited<ReturnType<typeof deviceClient>>;
  beforeAll(async () => {
    server = await startTestServer();
    device = await deviceClient(server);
  });
  afterAll(async () => {
    await device.close();
    await server.close();
  });

  test.each([
    ['a code and a stale secret', { xsrf: 'forged', user_code: 'BCDF-GHJK' }],
    ['a code alone', { user_code: 'bcdfghjk' }],
    ['a confirmation', { xsrf: 'x', user_code: 'BCDF-GHJK', confirm: 'yes' }],
    ['fields twice', { xsrf: ['a', 'b'], user_code: ['BCDF-GHJK', 'x'] }],
    ['nothing', {}],
  ])('%s: 303 back to the code form', async (_what, form) => {
    const res = await server.client.post('/oidc/device', { form });

    expect(res.status).toBe(303);
    const back = new URL(res.header('location')!);
    expect(back.origin + back.pathname).toBe(`${server.url}/oidc/device`);
    expect(res.headerAll('set-cookie')).toEqual([]);
  });

  test('the person lands on the form with the code they typed, and can go on from there', async () => {
    const started = await startDevice(device.config);
    const browser = cookieJar(server.client);

    const bounced = await browser.post('/oidc/device', {
      form: { xsrf: 'stale', user_code: started.user_code },
    });
    const location = bounced.header('location')!;
    expect(new URL(location).searchParams.get('user_code')).toBe(started.user_code);
    const form = await browser.get(location);
    expect(form.status).toBe(200);
    expect(inputValue(form.text, 'user_code')).toBe(started.user_code);

    const done = await personSignsIn(browser, location, {
      username: ADMIN_USERNAME,
      password: ADMIN_PASSWORD,
    });
    expect(headingOf(done.text)).toBe('Device signed in');
  });
});
