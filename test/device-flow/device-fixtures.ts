import * as oc from 'openid-client';
import type { HttpsClient, RequestOptions, TestResponse } from '../helpers/https-client.js';
import type { TestServer } from '../helpers/test-server.js';
import { discoverClient, issuerOf } from '../oidc/oidc-fixtures.js';

/** The person's browser: an HTTPS client that keeps the cookies it is given, per name. */
export function cookieJar(client: HttpsClient) {
  const cookies = new Map<string, string>();
  const remember = (res: TestResponse) => {
    for (const line of res.headerAll('set-cookie')) {
      const [pair] = line.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) cookies.delete(name);
      else cookies.set(name, value);
    }
    return res;
  };
  const withCookies = (o: RequestOptions = {}): RequestOptions => {
    if (cookies.size === 0) return o;
    const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    return { ...o, headers: { ...o.headers, cookie } };
  };
  return {
    cookies,
    get: async (path: string, o?: RequestOptions) => remember(await client.get(path, withCookies(o))),
    post: async (path: string, o?: RequestOptions) => remember(await client.post(path, withCookies(o))),
  };
}

export type Browser = ReturnType<typeof cookieJar>;

/** A hidden or visible input's value on a page. */
export function inputValue(html: string, name: string): string | undefined {
  const tag = new RegExp(`<input[^>]*name="${name}"[^>]*>`).exec(html)?.[0];
  const value = tag && /value="([^"]*)"/.exec(tag)?.[1];
  return value
    ?.replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
}

/** The page's `<h1>`, unescaped enough for assertions. */
export const headingOf = (html: string) => /<h1>([^<]*)<\/h1>/.exec(html)?.[1];

/**
 * The person opens `verification_uri_complete`: the code form, prefilled. They continue, and the
 * code is looked up: its confirmation names the code and offers confirm and decline. They confirm,
 * and get the first login step: answers the 303 to the login page.
 */
export async function confirmCode(browser: Browser, verificationUriComplete: string) {
  const linked = await browser.get(verificationUriComplete);
  if (linked.status !== 200) throw new Error(`code form: ${linked.status} ${linked.text}`);
  const confirmed = await browser.post('/oidc/device', {
    form: { xsrf: inputValue(linked.text, 'xsrf')!, user_code: inputValue(linked.text, 'user_code')! },
  });
  if (confirmed.status !== 200) return { linked, confirmed, login: confirmed };
  const login = await browser.post('/oidc/device', {
    form: {
      xsrf: inputValue(confirmed.text, 'xsrf')!,
      user_code: inputValue(confirmed.text, 'user_code')!,
      confirm: 'yes',
    },
  });
  return { linked, confirmed, login };
}

/** The auth request id of the login page a 303 points to. */
export const authRequestIdOf = (res: TestResponse) =>
  new URL(res.header('location')!, 'https://x').searchParams.get('authRequestID')!;

/** The device: openid-client, by discovery, as a headless script would use it. */
export async function deviceClient(server: TestServer, host = '127.0.0.1') {
  const { config, close } = await discoverClient(server, issuerOf(server, host));
  // The test waits for nothing: polls are timed by the test itself where timing matters.
  return { config, close };
}

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

/** One poll of the token endpoint, raw (openid-client's poller would wait the interval). */
export function pollOnce(client: HttpsClient, deviceCode: string) {
  return client.post('/oidc/token', {
    form: { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: 'svc' },
  });
}

/** Starts a device authorization with openid-client. */
export function startDevice(config: oc.Configuration, scope = 'openid offline_access', extra = {}) {
  return oc.initiateDeviceAuthorization(config, { scope, ...extra });
}

/** Where a device code stands in the database (its poll state), by its user code. */
export async function deviceRow(server: TestServer, userCode: string) {
  const normalized = userCode.replace(/-/g, '');
  return server.app
    .knex('oidc_payloads')
    .where({ model: 'DeviceCode', user_code: normalized })
    .first('polled_at', 'poll_interval', 'expires_at', 'consumed_at', 'payload');
}

/** Moves a device code's last poll `seconds` into the past, as if the device had waited that long. */
export async function agePoll(server: TestServer, userCode: string, seconds: number) {
  await server.app.knex.raw(
    `UPDATE oidc_payloads SET polled_at = polled_at - make_interval(secs => ?)
      WHERE model = 'DeviceCode' AND user_code = ?`,
    [seconds, userCode.replace(/-/g, '')],
  );
}

/** Makes a device code expired `seconds` ago, in its row and in its payload. */
export async function expireDeviceCode(server: TestServer, userCode: string, seconds: number) {
  await server.app.knex.raw(
    `UPDATE oidc_payloads
        SET expires_at = now() - make_interval(secs => ?),
            payload = jsonb_set(payload, '{exp}', to_jsonb(floor(extract(epoch from now()))::int - ?))
      WHERE model = 'DeviceCode' AND user_code = ?`,
    [seconds, seconds, userCode.replace(/-/g, '')],
  );
}

/** The person opens the link, confirms, and signs in with a password: answers the result page. */
export async function personSignsIn(
  browser: Browser,
  verificationUriComplete: string,
  credentials: { username: string; password: string },
) {
  const { login } = await confirmCode(browser, verificationUriComplete);
  if (login.status !== 303) throw new Error(`confirm: ${login.status} ${login.text}`);
  const page = new URL(login.header('location')!, 'https://x');
  return browser.post(page.pathname + page.search, {
    form: { authRequestId: authRequestIdOf(login), ...credentials },
  });
}
