// Start, sign in, refresh, stop: the built controller (dist/) on whatever `node` runs this file.
// Plain JavaScript, so it needs no TypeScript tooling and runs on every supported Node.js release
// (.ci/run runs it on the oldest one, Node.js 22). With SMOKE_DATABASE_URL (a PostgreSQL URL whose
// role may create databases) it uses a fresh database there; without, the embedded one.
//
//   npm run build && node scripts/smoke-start-login-refresh.mjs
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const MAIN = join(process.cwd(), 'dist', 'src', 'main.js');
const PASSWORD = randomBytes(12).toString('base64url');
const REDIRECT_URI = 'http://127.0.0.1:54321/auth/callback';
const START_TIMEOUT_MS = 120_000;

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });
}

/** A database of its own on the server of `url`, dropped by `drop`. */
async function freshDatabase(url) {
  const name = `svc_smoke_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const own = new URL(url);
  own.pathname = `/${name}`;
  return {
    url: own.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** One HTTPS request to the controller, trusting only its CA; JSON or form bodies. */
function send(base, ca, path, { method = 'GET', json, form, headers = {} } = {}) {
  const body = json ? JSON.stringify(json) : form ? new URLSearchParams(form).toString() : undefined;
  const type = json ? 'application/json' : form ? 'application/x-www-form-urlencoded' : undefined;
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, base),
      {
        method,
        ca,
        servername: 'localhost',
        headers: { ...headers, ...(type && { 'content-type': type }) },
        timeout: 30_000,
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer`)));
    req.on('error', reject);
    req.end(body);
  });
}

function expectStatus(what, res, status) {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${res.text}`);
  return res;
}

/** The authorization code flow with PKCE for the public client `svc`, cookie-less as the API allows. */
async function passwordLogin(base, ca) {
  const verifier = randomBytes(32).toString('base64url');
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: 'svc',
    redirect_uri: REDIRECT_URI,
    scope: 'openid offline_access',
    state: randomBytes(8).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    method: 'password',
  });
  const started = expectStatus('authorization', await send(base, ca, `/oidc/authorization?${params}`), 303);
  const loginPage = new URL(started.headers.location, base);
  let res = await send(base, ca, loginPage.pathname, {
    method: 'POST',
    json: {
      authRequestId: loginPage.searchParams.get('authRequestID'),
      username: 'admin',
      password: PASSWORD,
    },
  });
  for (let hop = 0; hop < 10 && !String(res.headers.location).startsWith(REDIRECT_URI); hop++) {
    if (res.status < 300 || res.status >= 400) throw new Error(`login: ${res.status} ${res.text}`);
    res = await send(base, ca, new URL(res.headers.location, base).toString());
  }
  const code = new URL(res.headers.location).searchParams.get('code');
  const tokens = await send(base, ca, '/oidc/token', {
    method: 'POST',
    form: {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      client_id: 'svc',
      code_verifier: verifier,
    },
  });
  return JSON.parse(expectStatus('code exchange', tokens, 200).text);
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-smoke-'));
  const db = process.env.SMOKE_DATABASE_URL ? await freshDatabase(process.env.SMOKE_DATABASE_URL) : undefined;
  const port = await freePort();
  const base = `https://127.0.0.1:${port}`;
  let output = '';
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      SVC_DATA_DIR: dataDir,
      SVC_ADDRESS: `127.0.0.1:${port}`,
      SVC_ADMIN_PASSWORD: PASSWORD,
      SVC_MASTER_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'info',
      ...(db && { DATABASE_URL: db.url }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!output.includes('controller listening')) {
      if (child.exitCode !== null) throw new Error(`the controller exited ${child.exitCode}`);
      if (Date.now() > deadline)
        throw new Error(`the controller did not listen within ${START_TIMEOUT_MS} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
    if (output.includes('Unsupported runtime'))
      throw new Error('oidc-provider calls this runtime unsupported');
    const ca = readFileSync(join(dataDir, 'pki', 'ca.pem'));

    const first = await passwordLogin(base, ca);
    if (!first.refresh_token) throw new Error('no refresh token for scope offline_access');
    const refreshed = JSON.parse(
      expectStatus(
        'refresh',
        await send(base, ca, '/oidc/token', {
          method: 'POST',
          form: { grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: 'svc' },
        }),
        200,
      ).text,
    );
    if (refreshed.access_token === first.access_token)
      throw new Error('refresh returned the same access token');
    const me = await send(base, ca, '/edge/management/v1/current-identity', {
      headers: { authorization: `Bearer ${refreshed.access_token}` },
    });
    if (JSON.parse(expectStatus('current-identity', me, 200).text).data?.name !== 'admin') {
      throw new Error(`current-identity is not admin: ${me.text}`);
    }

    child.kill('SIGTERM');
    const code = await exited;
    if (code !== 0) throw new Error(`the controller exited ${code} on SIGTERM`);
    console.log(
      `smoke ok on node ${process.version} (${db ? 'PostgreSQL' : 'embedded database'}): ` +
        'start, password sign-in (code flow with PKCE), refresh, Edge API call with the new token, stop',
    );
  } catch (err) {
    console.error(
      `smoke failed on node ${process.version}: ${err.message}\n--- controller output\n${output}`,
    );
    process.exitCode = 1;
  } finally {
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
