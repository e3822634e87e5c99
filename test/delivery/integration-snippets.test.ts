// The snippets of docs/integrating.md are proven against working code.
//
// - openid-client: the test takes the first ```js block under "## Node.js", puts in the controller's
//   port instead of 1280, performs the one step a browser does (the login page, right after the line
//   "// redirect the browser to authorizationUrl.href", defining `currentUrl`), and runs it with node
//   and NODE_EXTRA_CA_CERTS, as the page says. It then checks what the page promises after
//   sign-out: the access token is refused with a 401 challenge.
// - curl: the ```sh block under "## Any OAuth 2 library" runs with sh, as the page says, from a
//   directory whose data/pki/ca.pem is the controller's CA, with the port put in. The browser step
//   is the same login, done by the test with the URL the script prints; the code goes in at the
//   script's prompt. The answers it prints and the tokens it keeps are then checked.
// - device authorization grant: the ```js block under "## A device without a browser" runs like the
//   first one; the person's side (the code page, confirm, the password login) is done by the test
//   with the link the script prints, while the script polls. Its tokens are then checked.
// - oidc-client-ts: the page's UserManager settings must be the text of examples/spa/app.js, which
//   test/browser/spa.test.ts runs in Chromium; its calls and config keys must be the example's.
//
// The controller snippets speak only HTTP to the controller, so the embedded database suffices:
// they run on the PGlite leg of CI only.
import { afterAll, describe, expect, test } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cookieJar, personSignsIn } from '../device-flow/device-fixtures.js';
import { createHttpsClient } from '../helpers/https-client.js';
import { followToCallback } from '../helpers/oidc-client.js';
import { spawnController, waitListening, type SpawnedController } from '../helpers/spawn-controller.js';
import { BINARIES, testNeeding } from '../helpers/system-binaries.js';
import { waitFor } from '../helpers/wait-for.js';

const root = resolve(process.cwd());
const FENCE = '`'.repeat(3);
const BROWSER_MARK = '// redirect the browser to authorizationUrl.href';

const ADMIN_PASSWORD = 'admin-password-1';

const integrating = () => readFileSync(join(root, 'docs', 'integrating.md'), 'utf8');

/** The text of the section whose heading starts with `heading`, up to the next "## ". */
function section(markdown: string, heading: string): string {
  const start = markdown.split('\n').findIndex((line) => line.startsWith(`## ${heading}`));
  if (start < 0) throw new Error(`docs/integrating.md: no section "## ${heading}"`);
  return markdown
    .split('\n')
    .slice(start + 1)
    .join('\n')
    .split(/^## /m)[0]!;
}

/** The first fenced block of `lang` in `text`. */
function fenced(text: string, lang: string, where: string): string {
  const block = new RegExp(`^${FENCE}${lang}\\n([\\s\\S]*?)^${FENCE}$`, 'm').exec(text)?.[1];
  if (!block) throw new Error(`docs/integrating.md: no ${lang} block under "## ${where}"`);
  return block;
}

function openidClientSnippet(markdown: string): string {
  const block = fenced(section(markdown, 'Node.js'), 'js', 'Node.js');
  if (!block.includes(BROWSER_MARK)) throw new Error(`the snippet lost the line "${BROWSER_MARK}"`);
  return block;
}

const DEVICE_SECTION = 'A device without a browser';

/** What the device script prints after the page's snippet: what it got, without tokens. */
const afterDeviceSnippet = `
console.log(JSON.stringify({
  identity: identity.name,
  amr: tokens.claims().amr,
  apiSession: tokens.claims().z_asid,
  rotated: refreshed.refresh_token !== tokens.refresh_token,
  refreshedAccessToken: refreshed.access_token,
}));
`;

const CURL_SECTION = 'Any OAuth 2 library';
/** The line of the curl script that waits for the code the browser came back with. */
const CODE_PROMPT = "printf 'code: '; read -r CODE";

function curlScript(markdown: string): string {
  const block = fenced(section(markdown, CURL_SECTION), 'sh', CURL_SECTION);
  if (!block.includes(CODE_PROMPT)) throw new Error(`the curl script lost the line "${CODE_PROMPT}"`);
  return block;
}

/** Every JSON object in `text`, in order: curl and jq print them one after another. */
function jsonObjects(text: string): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  let start = text.indexOf('{');
  while (start >= 0) {
    let end = text.indexOf('}', start);
    for (; end >= 0; end = text.indexOf('}', end + 1)) {
      try {
        found.push(JSON.parse(text.slice(start, end + 1)) as Record<string, unknown>);
        break;
      } catch {
        // not yet the closing brace of this object
      }
    }
    if (end < 0) throw new Error(`unparsable output from: ${text.slice(start, start + 200)}`);
    start = text.indexOf('{', end + 1);
  }
  return found;
}

/** What the user's browser does between the redirect and the callback: the password login page. */
const browserStep = `
const currentUrl = await (async () => {
  let r = await fetch(authorizationUrl, { redirect: 'manual' });
  const page = new URL(r.headers.get('location'), authorizationUrl);
  r = await fetch(new URL(page.pathname, page), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ authRequestId: page.searchParams.get('authRequestID'), username: 'admin', password: process.env.ADMIN_PASSWORD }),
  });
  for (let hop = 0; hop < 10; hop++) {
    const location = r.headers.get('location');
    if (!location) throw new Error('login: ' + r.status + ' ' + (await r.text()));
    if (location.startsWith(redirect_uri)) return new URL(location);
    r = await fetch(new URL(location, page), { redirect: 'manual' });
  }
  throw new Error('too many redirects');
})();
`;

const afterSnippet = `
let refusal;
try {
  await client.fetchProtectedResource(config, refreshed.access_token, new URL('https://localhost:1280/edge/client/v1/current-identity'), 'GET');
} catch (err) {
  refusal = { code: err.code, status: err.status, realm: err.cause?.[0]?.parameters?.realm };
}
console.log(JSON.stringify({
  identity: identity.name,
  sub: claims.sub,
  rotated: refreshed.refresh_token !== tokens.refresh_token,
  logout: logoutUrl.href,
  refusal,
}));
`;

/** Appended to the curl script: what it kept, for the checks that follow. */
const AFTER_SCRIPT = '--- after the script';
const afterScript = `
echo '${AFTER_SCRIPT}'
printf '{"access_token":"%s","refresh_token":"%s"}\\n' "$ACCESS_TOKEN" "$REFRESH_TOKEN"
`;

const onPglite = !process.env.TEST_DATABASE_URL;
if (!onPglite) console.log('integration-snippets: HTTP only, runs on the PGlite leg');

describe('docs/integrating.md', () => {
  const work = mkdtempSync(join(tmpdir(), 'svc-snippets-'));
  // The page's own layout: the snippets read data/pki/ca.pem relative to the working directory.
  const dataDir = join(work, 'data');
  let controller: SpawnedController | undefined;

  /** One controller for both snippets that talk to it, started by the first. */
  async function running(): Promise<SpawnedController> {
    if (!controller) {
      controller = await spawnController({ SVC_DATA_DIR: dataDir });
      await waitListening(controller);
    }
    return controller;
  }

  /** The snippets import openid-client as an application would: from ./node_modules. */
  function linkNodeModules() {
    if (!existsSync(join(work, 'node_modules')))
      symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'));
  }

  afterAll(async () => {
    if (controller && controller.child.exitCode === null) {
      controller.child.kill('SIGTERM');
      await controller.exited;
    }
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  test('the snippets name the browser steps the test fills in', () => {
    const markdown = integrating();
    expect(openidClientSnippet(markdown)).toContain('client.discovery(');
    expect(curlScript(markdown)).toMatch(/^echo "https:\/\/localhost:1280\/oidc\/authorization\?/m);
  });

  (onPglite ? test : test.skip)(
    'the openid-client snippet signs in, calls the Edge API, refreshes and signs out',
    async () => {
      const snippet = openidClientSnippet(integrating());
      const { port } = await running();

      const program = snippet.replace(BROWSER_MARK, `${BROWSER_MARK}\n${browserStep}`) + afterSnippet;
      linkNodeModules();
      writeFileSync(join(work, 'app.mjs'), program.replaceAll('localhost:1280', `localhost:${port}`));

      const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number }>(
        (done) =>
          execFile(
            process.execPath,
            ['app.mjs'],
            {
              cwd: work,
              timeout: 60_000,
              env: {
                PATH: process.env.PATH,
                NODE_EXTRA_CA_CERTS: join(dataDir, 'pki', 'ca.pem'),
                ADMIN_PASSWORD,
              },
            },
            (err, out, errOut) =>
              done({ stdout: out, stderr: errOut, code: err ? ((err as { code?: number }).code ?? 1) : 0 }),
          ),
      );
      if (code !== 0) throw new Error(`the snippet failed (exit ${code}):\n${stderr}\n${stdout}`);
      const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
      expect(result).toMatchObject({
        identity: 'admin',
        rotated: true,
        refusal: { code: 'OAUTH_WWW_AUTHENTICATE_CHALLENGE', status: 401, realm: 'svc-oidc' },
      });
      expect(String(result.logout)).toMatch(
        new RegExp(`^https://localhost:${port}/oidc/end_session\\?.*id_token_hint=`),
      );
    },
    180_000,
  );

  (onPglite ? test : test.skip)(
    'the device flow snippet polls while the person signs in on the link it printed, then calls the Edge API and refreshes',
    async () => {
      const snippet = fenced(section(integrating(), DEVICE_SECTION), 'js', DEVICE_SECTION);
      expect(snippet).toContain('client.pollDeviceAuthorizationGrant(');
      const { port, ca } = await running();
      linkNodeModules();
      writeFileSync(
        join(work, 'device.mjs'),
        (snippet + afterDeviceSnippet).replaceAll('localhost:1280', `localhost:${port}`),
      );

      const script = spawn(process.execPath, ['device.mjs'], {
        cwd: work,
        env: { PATH: process.env.PATH, NODE_EXTRA_CA_CERTS: join(dataDir, 'pki', 'ca.pem') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      script.stdout.on('data', (d) => (stdout += d));
      script.stderr.on('data', (d) => (stderr += d));
      const closed = new Promise<number | null>((done) => script.on('close', (code) => done(code)));
      const phone = createHttpsClient(`https://localhost:${port}`, { ca: ca() });
      try {
        const link = await waitFor(
          () =>
            /^(https:\/\/localhost:\d+\/oidc\/device\?user_code=\S+)$/m.exec(stdout)?.[1] ??
            (script.exitCode !== null ? 'exited' : undefined),
          { timeout: 60_000, what: 'the verification link on the script output' },
        );
        if (link === 'exited') throw new Error(`the script ended before its link:\n${stderr}\n${stdout}`);
        expect(stdout).toMatch(
          new RegExp(
            `^On your phone, open https://localhost:${port}/oidc/device and enter [B-Z]{4}-[B-Z]{4}$`,
            'm',
          ),
        );

        await personSignsIn(cookieJar(phone), link, { username: 'admin', password: ADMIN_PASSWORD });

        const code = await closed;
        if (code !== 0) throw new Error(`the script failed (exit ${code}):\n${stderr}\n${stdout}`);
        const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
        expect(result).toMatchObject({ identity: 'admin', amr: ['pwd'], rotated: true });
        expect(typeof result.apiSession).toBe('string');
        const me = await phone.get('/edge/client/v1/current-identity', {
          headers: { authorization: `Bearer ${String(result.refreshedAccessToken)}` },
        });
        expect([me.status, me.body.data?.name]).toEqual([200, 'admin']);
      } finally {
        if (script.exitCode === null && script.signalCode === null) script.kill('SIGTERM');
        await closed;
        await phone.close();
      }
    },
    180_000,
  );

  testNeeding([BINARIES.curl, BINARIES.openssl, BINARIES.jq], onPglite ? test : test.skip)(
    'the curl script signs in, calls the Edge API, refreshes and revokes; the endpoint table is discovery',
    async () => {
      const markdown = integrating();
      const curlSection = section(markdown, CURL_SECTION);
      const { port, ca } = await running();
      const here = (text: string) => text.replaceAll('localhost:1280', `localhost:${port}`);
      writeFileSync(join(work, 'signin.sh'), here(curlScript(markdown) + afterScript));

      // `sh -eu`: a failed command substitution or a variable the page never sets stops the script.
      const script = spawn('sh', ['-eu', 'signin.sh'], {
        cwd: work,
        env: { PATH: process.env.PATH, HOME: work },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      script.stdout.on('data', (d) => (stdout += d));
      script.stderr.on('data', (d) => (stderr += d));
      const closed = new Promise<number | null>((done) => script.on('close', (code) => done(code)));
      const browser = createHttpsClient(`https://localhost:${port}`, { ca: ca() });
      try {
        // The URL the page says to open, as the script printed it.
        const printed = await waitFor(
          () =>
            /^(https:\/\/localhost:\d+\/oidc\/authorization\?\S+)$/m.exec(stdout)?.[1] ??
            (script.exitCode !== null ? 'exited' : undefined),
          { timeout: 60_000, what: 'the authorization URL on the script output' },
        );
        if (printed === 'exited')
          throw new Error(`the script ended before its prompt:\n${stderr}\n${stdout}`);

        // The browser step: the same password login the openid-client snippet's browser step does.
        const page = await browser.get(printed);
        const loginPage = new URL(page.header('location') ?? '', printed);
        expect(loginPage.pathname).toBe('/oidc/login/username');
        const login = await browser.post(loginPage.pathname, {
          body: {
            authRequestId: loginPage.searchParams.get('authRequestID'),
            username: 'admin',
            password: ADMIN_PASSWORD,
          },
        });
        const callback = await followToCallback(browser, login, 'http://127.0.0.1:8080/auth/callback');
        expect(callback).toMatchObject({ state: 'xyz', iss: `https://localhost:${port}/oidc` });
        script.stdin.end(`${callback.code}\n`);

        const code = await closed;
        if (code !== 0) throw new Error(`the script failed (exit ${code}):\n${stderr}\n${stdout}`);
        const [printedByPage, printedAfter] = stdout.split(`${AFTER_SCRIPT}\n`);
        // Discovery, the code exchange, the Edge API answer, the refresh; the revocation prints nothing.
        const answers = jsonObjects(printedByPage!);
        expect(answers).toHaveLength(4);
        const [discovery, tokens, identity, refreshed] = answers as [
          Record<string, unknown>,
          Record<string, string | number>,
          { data: Record<string, unknown> },
          Record<string, string | number>,
        ];

        expect(discovery.issuer).toBe(`https://localhost:${port}/oidc`);
        const table = [...curlSection.matchAll(/^\| `(\w+)` \| `(https:\/\/[^`]+)` \|$/gm)];
        expect(table.map(([, name]) => name)).toContain('token_endpoint');
        for (const [, name, url] of table) expect([name, discovery[name!]]).toEqual([name, here(url!)]);

        const minted = {
          token_type: 'Bearer',
          expires_in: 1800,
          access_token: expect.any(String),
          id_token: expect.any(String),
          refresh_token: expect.any(String),
        };
        expect(tokens).toMatchObject(minted);
        expect(identity.data).toMatchObject({ name: 'admin' });
        expect(refreshed).toMatchObject(minted);
        expect(refreshed.access_token).not.toBe(tokens.access_token);
        expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

        // The script kept the newest tokens; revoking the refresh token ended the session.
        const kept = jsonObjects(printedAfter!)[0] as Record<string, string>;
        expect(kept).toEqual({
          access_token: refreshed.access_token,
          refresh_token: refreshed.refresh_token,
        });
        const refused = await browser.get('/edge/client/v1/current-identity', {
          headers: { authorization: `Bearer ${kept.access_token}` },
        });
        expect(refused.status).toBe(401);
        expect(refused.header('www-authenticate')).toMatch(/^Bearer realm="svc-oidc"/);
        const reused = await browser.post('/oidc/token', {
          form: { grant_type: 'refresh_token', client_id: 'svc', refresh_token: kept.refresh_token! },
        });
        expect([reused.status, reused.body.error]).toEqual([400, 'invalid_grant']);

        // The page's sign-out URL with the ID token put in: the hint is accepted and the default
        // patterns allow its post_logout_redirect_uri (the session itself already ended above).
        const signOut = /`(https:\/\/localhost:1280\/oidc\/end_session\?[^`]+)`/.exec(curlSection)?.[1];
        expect(signOut).toContain('id_token_hint=<id_token>');
        const ended = await browser.get(here(signOut!.replace('<id_token>', String(refreshed.id_token))));
        expect([ended.status, ended.header('location')]).toEqual([
          303,
          'http://127.0.0.1:8080/auth/logout?state=xyz',
        ]);
      } finally {
        if (script.exitCode === null && script.signalCode === null) script.kill('SIGTERM');
        await closed;
        await browser.close();
      }
    },
    180_000,
  );

  test("the oidc-client-ts settings are examples/spa/app.js's, which the Chromium test runs", () => {
    const snippet = fenced(section(integrating(), 'Browser'), 'js', 'Browser');
    const app = readFileSync(join(root, 'examples', 'spa', 'app.js'), 'utf8');
    const server = readFileSync(join(root, 'examples', 'spa', 'server.js'), 'utf8');

    const settings = /^const manager = new UserManager\(\{\n[\s\S]*?^\}\);$/m.exec(snippet)?.[0];
    expect(settings).toContain('authority: config.authority,');
    expect(app).toContain(settings);
    // The page imports what the example takes from the browser bundle's global.
    const imported = /^import \{ ([\w, ]+) \} from 'oidc-client-ts';$/m.exec(snippet)?.[1];
    expect(app).toContain(`const { ${imported} } = oidc;`);
    // Every UserManager call of the page is one the example makes.
    const calls = [...new Set([...snippet.matchAll(/\bmanager\.(\w+)\(/g)].map(([, call]) => call))];
    expect(calls).toEqual(
      expect.arrayContaining(['signinRedirect', 'signinRedirectCallback', 'signinSilent']),
    );
    for (const call of calls) expect([call, app.includes(`manager.${call}(`)]).toEqual([call, true]);
    // The page's config object has the keys of the example's /config.json.
    const keysOf = (text: string) => {
      const object = /^const config = \{\n([\s\S]*?)^\};$/m.exec(text)?.[1] ?? '';
      return [...object.matchAll(/^ {2}(\w+): /gm)].map(([, key]) => key).sort();
    };
    expect(keysOf(snippet)).toEqual(['api', 'authority', 'clientId']);
    expect(keysOf(server)).toEqual(keysOf(snippet));
  });
});
