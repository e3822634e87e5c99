import { createHttpsClient, type RequestOptions, type TestResponse } from '../helpers/https-client.js';

/**
 * A client that behaves as a browser does for plain pages: it keeps cookies (per host and path,
 * honouring Max-Age/Expires deletions), follows redirects (303 → GET), and sends `Origin` with
 * every POST, as browsers do with form submissions.
 */
export function browserLike(o: {
  baseUrl: string;
  ca: string;
  /** Another instance's port, keeping `baseUrl`'s Host (the instances of one deployment). */
  connectPort?: number;
  /** The cookies of another browserLike: the same browser, reaching another instance. */
  jar?: Map<string, string>;
}) {
  const { baseUrl } = o;
  const client = createHttpsClient(baseUrl, {
    ca: o.ca,
    ...(o.connectPort ? { connectPort: o.connectPort } : {}),
  });
  const jar = o.jar ?? new Map<string, string>();
  const origin = new URL(baseUrl).origin;

  /** Every Set-Cookie line received, in order (attributes included). */
  const setCookies: string[] = [];

  function store(res: TestResponse) {
    for (const line of res.headerAll('set-cookie')) {
      setCookies.push(line);
      const [pair, ...attrs] = line.split(';').map((s) => s.trim());
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      const expires = attrs.find((a) => a.toLowerCase().startsWith('expires='));
      const gone =
        value === '' || (expires !== undefined && new Date(expires.slice(8)).getTime() < Date.now());
      if (gone) jar.delete(name);
      else jar.set(name, value);
    }
  }

  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');

  async function send(method: string, path: string, first: RequestOptions & { origin?: string | null } = {}) {
    let current = new URL(path, baseUrl).toString();
    let m = method;
    let opts: RequestOptions = first;
    const visited: string[] = [];
    for (let hop = 0; hop < 15; hop++) {
      const headers: Record<string, string | string[]> = {
        accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
        ...opts.headers,
      };
      if (jar.size > 0) headers.cookie = cookieHeader();
      if (m === 'POST' && first.origin !== null) headers.origin = first.origin ?? origin;
      const res = await client.request(m, current, { ...opts, headers });
      store(res);
      visited.push(`${m} ${new URL(current).pathname}`);
      const location = res.header('location');
      if (res.status >= 300 && res.status < 400 && location) {
        const next = new URL(location, current);
        if (next.origin !== origin) return Object.assign(res, { visited, url: next.toString() });
        current = next.toString();
        if (res.status !== 307 && res.status !== 308) {
          m = 'GET';
          opts = {};
        }
        continue;
      }
      return Object.assign(res, { visited, url: current });
    }
    throw new Error('too many redirects');
  }

  return {
    jar,
    setCookies,
    client,
    get: (path: string) => send('GET', path),
    post: (path: string, form: Record<string, string> = {}, more: { origin?: string | null } = {}) =>
      send('POST', path, { form, ...more }),
    close: () => client.close(),
  };
}

export type BrowserLike = ReturnType<typeof browserLike>;

/** The value of a hidden or text input in a page. */
export function inputValue(html: string, name: string): string | undefined {
  const m = new RegExp(`<input[^>]*name="${name}"[^>]*value="([^"]*)"`).exec(html);
  return m?.[1]?.replace(/&amp;/g, '&');
}

/** Signs in on the account page through the login page with a password; returns the overview. */
export async function signIn(browser: BrowserLike, username: string, password: string, returnTo?: string) {
  const loginPage = await browser.post('/account/login', returnTo ? { returnTo } : {});
  if (loginPage.status !== 200 || !loginPage.url.includes('/oidc/login/')) {
    throw new Error(`expected the login page, got ${loginPage.status} ${loginPage.url} ${loginPage.text}`);
  }
  const authRequestId = inputValue(loginPage.text, 'authRequestId')!;
  const action = /<form method="post" action="([^"]+)"/.exec(loginPage.text)![1]!;
  const done = await browser.post(action, { authRequestId, username, password });
  if (done.status !== 200) throw new Error(`sign-in failed: ${done.status} ${done.visited} ${done.text}`);
  return done;
}

export const csrfOf = (html: string) => inputValue(html, 'csrf')!;

/** A browser on a test server's first listener. */
export const browserOn = (server: { url: string; ca: string }) =>
  browserLike({ baseUrl: server.url, ca: server.ca });
