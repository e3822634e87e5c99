// The openid-client snippet of docs/integrating.md runs as written against a real controller: the
// test takes the first ```js block under "## Node.js", puts in the controller's port instead of
// 1280, performs the one step a browser does (the login page, right after the line
// "// redirect the browser to authorizationUrl.href", defining `currentUrl`), and runs it with node
// and NODE_EXTRA_CA_CERTS, as the page says. It then checks what the page promises after
// sign-out: the access token is refused with a 401 challenge.
//
// The snippet speaks only HTTP to the controller, so the embedded database suffices: the test
// runs on the PGlite leg of CI only.
import { afterAll, describe, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnController, waitListening, type SpawnedController } from '../helpers/spawn-controller.js';

const root = resolve(process.cwd());
const FENCE = '`'.repeat(3);
const BROWSER_MARK = '// redirect the browser to authorizationUrl.href';

function openidClientSnippet(markdown: string): string {
  const section = markdown.split(/^## Node\.js.*$/m)[1]?.split(/^## /m)[0] ?? '';
  const block = new RegExp(`^${FENCE}js\\n([\\s\\S]*?)^${FENCE}$`, 'm').exec(section)?.[1];
  if (!block) throw new Error('docs/integrating.md: no js block under "## Node.js"');
  if (!block.includes(BROWSER_MARK)) throw new Error(`the snippet lost the line "${BROWSER_MARK}"`);
  return block;
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

const onPglite = !process.env.TEST_DATABASE_URL;
if (!onPglite) console.log('integration-snippets: HTTP only, runs on the PGlite leg');

describe('docs/integrating.md', () => {
  const work = mkdtempSync(join(tmpdir(), 'svc-snippets-'));
  let controller: SpawnedController | undefined;

  afterAll(async () => {
    if (controller && controller.child.exitCode === null) {
      controller.child.kill('SIGTERM');
      await controller.exited;
    }
    rmSync(work, { recursive: true, force: true });
  }, 60_000);

  test('the snippet names the browser step the test fills in', () => {
    expect(openidClientSnippet(readFileSync(join(root, 'docs', 'integrating.md'), 'utf8'))).toContain(
      'client.discovery(',
    );
  });

  (onPglite ? test : test.skip)(
    'the openid-client snippet signs in, calls the Edge API, refreshes and signs out',
    async () => {
      const snippet = openidClientSnippet(readFileSync(join(root, 'docs', 'integrating.md'), 'utf8'));
      const dataDir = join(work, 'data');
      controller = await spawnController({ SVC_DATA_DIR: dataDir });
      await waitListening(controller);

      const program = snippet.replace(BROWSER_MARK, `${BROWSER_MARK}\n${browserStep}`) + afterSnippet;
      symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'));
      writeFileSync(
        join(work, 'app.mjs'),
        program.replaceAll('localhost:1280', `localhost:${controller.port}`),
      );

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
                ADMIN_PASSWORD: 'admin-password-1',
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
        new RegExp(`^https://localhost:${controller.port}/oidc/end_session\\?.*id_token_hint=`),
      );
    },
    180_000,
  );
});
