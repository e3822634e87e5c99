// The replicated deployment, run for real: three controller processes on one PostgreSQL behind
// the HAProxy binary in TCP mode (TLS passes through to the controllers) with `send-proxy-v2`,
// round robin, one connection per request, and a readiness check over TLS. Each process logs a
// line per request with its request id and client address, which is how the test knows which
// replica served a hop and whom it saw.
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import knexFactory, { type Knex } from 'knex';
import * as oc from 'openid-client';
import { Agent, fetch as undiciFetch } from 'undici';
import { generateClientKeyAndCsr } from '../../src/crypto/pki.js';
import { createHttpsClient, perRequestClient, type HttpsClient } from '../helpers/https-client.js';
import { followToCallback, startAuthorization, submitLogin } from '../helpers/oidc-client.js';
import { connectWithPreamble, proxyV2 } from '../helpers/proxy-header.js';
import {
  freePort,
  spawnController,
  waitListening,
  type SpawnedController,
} from '../helpers/spawn-controller.js';
import { startTcpRelay, type TcpRelay } from '../helpers/tcp-relay.js';
import { BINARIES, describeNeeding } from '../helpers/system-binaries.js';
import { createTestDatabaseUrl, describeWithPostgres, usingPostgres } from '../helpers/test-database.js';
import { waitFor } from '../helpers/wait-for.js';

const HAPROXY = BINARIES.haproxy.path;
const REDIRECT_URI = 'http://127.0.0.1:54321/auth/callback';
const ADMIN_PASSWORD = 'admin-password-1';

/** The OAuth error code an openid-client call failed with. */
async function oauthErrorOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
  } catch (err) {
    return (err as { error?: string }).error ?? String(err);
  }
  throw new Error('the call succeeded');
}

/**
 * haproxy.cfg: TCP pass-through, round robin, PROXY v2 to every server, retry elsewhere on a
 * refused connect; a server is in the rotation while GET /health/ready answers 200 over TLS
 * (verified against the controllers' CA) after a PROXY header, as in deploy/haproxy/haproxy.cfg.
 */
function haproxyConfig(listen: number, servers: number[], caFile: string): string {
  return [
    'global',
    '  maxconn 256',
    'defaults',
    '  mode tcp',
    '  timeout connect 2s',
    '  timeout client 30s',
    '  timeout server 30s',
    '  retries 3',
    '  option redispatch 1',
    'frontend svc',
    `  bind 127.0.0.1:${listen}`,
    '  default_backend controllers',
    'backend controllers',
    '  balance roundrobin',
    '  option httpchk',
    `  http-check send meth GET uri /health/ready ver HTTP/1.1 hdr Host 127.0.0.1:${listen}`,
    '  http-check expect status 200',
    ...servers.map(
      (port, i) =>
        `  server c${i + 1} 127.0.0.1:${port} send-proxy-v2 check check-send-proxy inter 1s fall 1 rise 2` +
        ` check-ssl verify required ca-file ${caFile} verifyhost localhost`,
    ),
    '',
  ].join('\n');
}

// CI installs haproxy (.ci/run); elsewhere a missing binary skips the suite with one line.
const describeReplicated = usingPostgres
  ? describeNeeding([BINARIES.haproxy], describeWithPostgres)
  : describeWithPostgres;

describeReplicated('three controllers behind HAProxy (TCP pass-through, send-proxy-v2)', () => {
  const dirs: string[] = [];
  const replicas: SpawnedController[] = [];
  let haproxy: ChildProcess;
  let haproxyOutput = '';
  /** The third replica reaches PostgreSQL through this relay, so that it alone can lose it. */
  let databaseRelay: TcpRelay | undefined;
  let dropDatabase: () => Promise<void> = async () => undefined;
  let databaseUrl = '';
  let base: string;
  let issuer: string;
  let ca: string;
  let adminToken: string;

  /** A client through the proxy from `localAddress` that opens a new connection for every request. */
  function viaProxy(localAddress: string, tls: { cert?: string; key?: string } = {}): HttpsClient {
    return perRequestClient(base, { ca, ...tls, localAddress });
  }

  /** openid-client's fetch through the proxy, one connection per request, recording request ids. */
  function oidcFetch(localAddress: string, hops: string[], tls: { cert?: string; key?: string } = {}) {
    const agent = new Agent({ connect: { ca, ...tls }, localAddress, pipelining: 0 });
    const customFetch: oc.CustomFetch = async (url, options) => {
      const res = (await undiciFetch(url, {
        ...(options as object),
        dispatcher: agent,
      })) as unknown as Response;
      hops.push(res.headers.get('request-id') ?? 'none');
      return res;
    };
    return { customFetch, close: () => agent.close() };
  }

  /** Which replica logged the request, and the client address it logged. */
  function servedBy(requestId: string): { replica: number; clientAddress: string } {
    for (const [replica, c] of replicas.entries()) {
      const line = c
        .output()
        .split('\n')
        .find((l) => l.includes(`"requestId":"${requestId}"`) && l.includes('"msg":"request"'));
      if (line) return { replica, clientAddress: JSON.parse(line).clientAddress };
    }
    throw new Error(`no replica logged request ${requestId}`);
  }

  const settle = (requestIds: string[]) =>
    waitFor(() => requestIds.map(servedBy), { what: 'request log lines of every hop', timeout: 10_000 });

  /** The audit events every replica has logged so far. */
  const auditEvents = (): Record<string, any>[] =>
    replicas
      .flatMap((r) => r.output().split('\n'))
      .filter((l) => l.includes('"audit":true'))
      .map((l) => JSON.parse(l));

  beforeAll(async () => {
    const db = await createTestDatabaseUrl();
    dropDatabase = db!.drop;
    databaseUrl = db!.url;
    const proxyPort = await freePort();
    base = `https://127.0.0.1:${proxyPort}`;
    issuer = `${base}/oidc`;
    const ports = [await freePort(), await freePort(), await freePort()];
    const direct = new URL(db!.url);
    databaseRelay = await startTcpRelay(direct.hostname, Number(direct.port || 5432));
    const relayed = new URL(db!.url);
    relayed.hostname = '127.0.0.1';
    relayed.port = String(databaseRelay.port);
    for (const [i, port] of ports.entries()) {
      const dataDir = mkdtempSync(join(tmpdir(), 'svc-replica-'));
      dirs.push(dataDir);
      replicas.push(
        await spawnController(
          {
            SVC_DATA_DIR: dataDir,
            DATABASE_URL: i === 2 ? relayed.href : db!.url,
            // The issuer and the Host clients send are the proxy's address (ADR 0007).
            SVC_ADVERTISED_ADDRESS: `127.0.0.1:${proxyPort}`,
            SVC_PROXY_PROTOCOL_TRUSTED_FROM: '127.0.0.1/32',
            SVC_RATE_LIMITS_PER_SECOND: '1',
            SVC_RATE_LIMITS_BURST: '10',
            SVC_ADMIN_PASSWORD: ADMIN_PASSWORD,
          },
          port,
        ),
      );
    }
    await Promise.all(replicas.map((r) => waitListening(r)));
    ca = readFileSync(join(dirs[0]!, 'pki', 'ca.pem'), 'utf8');

    const cfgDir = mkdtempSync(join(tmpdir(), 'svc-haproxy-'));
    dirs.push(cfgDir);
    writeFileSync(
      join(cfgDir, 'haproxy.cfg'),
      haproxyConfig(proxyPort, ports, join(dirs[0]!, 'pki', 'ca.pem')),
    );
    haproxy = spawn(HAPROXY, ['-db', '-f', join(cfgDir, 'haproxy.cfg')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    haproxy.stdout!.on('data', (d) => (haproxyOutput += d));
    haproxy.stderr!.on('data', (d) => (haproxyOutput += d));
    const probe = viaProxy('127.0.0.1');
    // Three answers in a row: every server is up and checked.
    await waitFor(
      async () => {
        if (haproxy.exitCode !== null) throw new Error(`haproxy exited: ${haproxyOutput}`);
        for (let i = 0; i < 3; i++) if ((await probe.get('/health/ready')).status !== 200) return false;
        return true;
      },
      { what: `HAProxy on ${base}: ${haproxyOutput}`, timeout: 30_000 },
    );

    const admin = await viaProxy('127.0.0.1').post('/edge/management/v1/authenticate?method=password', {
      body: { username: 'admin', password: ADMIN_PASSWORD },
    });
    expect(admin.status).toBe(200);
    adminToken = admin.body.data.token;
  }, 180_000);

  afterAll(async () => {
    haproxy?.kill('SIGTERM');
    for (const r of replicas) if (r.child.exitCode === null) r.child.kill('SIGTERM');
    await Promise.all([
      ...replicas.map((r) => r.exited),
      haproxy && new Promise((r) => haproxy.once('exit', r)),
    ]);
    await databaseRelay?.close();
    await dropDatabase();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }, 60_000);

  const mgmt = (client: HttpsClient) => ({
    post: (path: string, body: unknown) =>
      client.post(`/edge/management/v1${path}`, { body, headers: { 'svc-session': adminToken } }),
    get: (path: string) =>
      client.get(`/edge/management/v1${path}`, { headers: { 'svc-session': adminToken } }),
  });

  /** A password identity, enrolled through the proxy. */
  async function passwordUser(name: string): Promise<{ id: string; password: string }> {
    const client = viaProxy('127.0.0.1');
    const created = await mgmt(client).post('/identities', {
      name,
      isAdmin: false,
      enrollment: { updb: name },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    const token = (await mgmt(client).get(`/identities/${id}`)).body.data.enrollment.updb.token;
    const password = `Pw-${name}-1234`;
    const enrolled = await client.post(`/edge/client/v1/enroll/updb?token=${token}`, { body: { password } });
    expect(enrolled.status).toBe(200);
    return { id, password };
  }

  test('openid-client logs in, refreshes and calls the APIs; every hop on another replica, each seeing the client', async () => {
    const user = await passwordUser('replica-user');
    const hops: string[] = [];
    const { customFetch, close } = oidcFetch('127.0.0.5', hops);
    const client = viaProxy('127.0.0.5');
    try {
      const config = await oc.discovery(new URL(issuer), 'svc', undefined, oc.None(), {
        [oc.customFetch]: customFetch,
      });
      const verifier = oc.randomPKCECodeVerifier();
      const url = oc.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT_URI,
        scope: 'openid offline_access',
        code_challenge: await oc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        method: 'password',
        state: 'st-1',
      });
      const start = await client.get(url.pathname + url.search);
      hops.push(start.header('request-id')!);
      expect(start.status).toBe(303);
      const loginUrl = new URL(start.header('location')!, base);
      const login = await client.post(loginUrl.pathname, {
        body: {
          authRequestId: loginUrl.searchParams.get('authRequestID'),
          username: 'replica-user',
          password: user.password,
        },
      });
      hops.push(login.header('request-id')!);
      expect(login.status).toBe(303);
      const tokens = await oc.authorizationCodeGrant(config, new URL(login.header('location')!), {
        pkceCodeVerifier: verifier,
        expectedState: 'st-1',
      });
      expect(tokens.claims()!.sub).toBe(user.id);
      expect(tokens.claims()!.iss).toBe(issuer);
      const info = await oc.fetchUserInfo(config, tokens.access_token, user.id);
      expect(info.sub).toBe(user.id);
      const me = await oc.fetchProtectedResource(
        config,
        tokens.access_token,
        new URL(`${base}/edge/client/v1/current-identity`),
        'GET',
      );
      expect(((await me.json()) as any).data.id).toBe(user.id);
      const refreshed = await oc.refreshTokenGrant(config, tokens.refresh_token!);
      expect(refreshed.access_token).not.toBe(tokens.access_token);
      const again = await oc.fetchProtectedResource(
        config,
        refreshed.access_token,
        new URL(`${base}/edge/client/v1/current-identity`),
        'GET',
      );
      expect(again.status).toBe(200);
    } finally {
      await close();
    }

    // Discovery, authorization, login, token, userinfo, API, refresh, API (openid-client's and
    // ours, in the order they happened: the authorization and login hops were pushed after
    // discovery, before the token request).
    expect(hops).toHaveLength(8);
    const served = await settle(hops);
    const order = served.map((s) => s.replica);
    for (let i = 1; i < order.length; i++) expect(order[i]).not.toBe(order[i - 1]);
    expect(new Set(order).size).toBe(3);
    expect(served.map((s) => s.clientAddress)).toEqual(Array(8).fill('127.0.0.5'));
    // Audit events of these requests (the login's at least) name the client too, never the proxy.
    const audited = auditEvents().filter((e) => hops.includes(e.requestId));
    expect(audited).toContainEqual(
      expect.objectContaining({ event: 'auth.login', outcome: 'success', identityId: user.id }),
    );
    for (const e of audited) expect([e.event, e.sourceAddress]).toEqual([e.event, '127.0.0.5']);
  });

  test('a client certificate logs in through the proxy (TLS is end to end); its tokens are bound to it on every replica', async () => {
    const client = viaProxy('127.0.0.6');
    const created = await mgmt(client).post('/identities', {
      name: 'replica-device',
      type: 'Device',
      isAdmin: false,
      enrollment: { ott: true },
    });
    const id = created.body.data.id as string;
    const ott = (await mgmt(client).get(`/identities/${id}`)).body.data.enrollment.ott.token;
    const { keyPem, csrPem } = await generateClientKeyAndCsr({ commonName: 'replica-device' });
    const enrolled = await client.post('/edge/client/v1/enroll/ott', {
      body: { token: ott, clientCsr: csrPem },
    });
    expect(enrolled.status).toBe(200);
    const tls = { cert: enrolled.body.data.cert as string, key: keyPem };

    const hops: string[] = [];
    const { customFetch, close } = oidcFetch('127.0.0.6', hops, tls);
    const withoutCert = oidcFetch('127.0.0.6', []);
    const mtls = viaProxy('127.0.0.6', tls);
    try {
      const config = await oc.discovery(new URL(issuer), 'svc', undefined, oc.None(), {
        [oc.customFetch]: customFetch,
      });
      const verifier = oc.randomPKCECodeVerifier();
      const url = oc.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT_URI,
        scope: 'openid offline_access',
        code_challenge: await oc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        method: 'cert',
        state: 'st-2',
      });
      const start = await mtls.get(url.pathname + url.search);
      const loginUrl = new URL(start.header('location')!, base);
      const login = await mtls.post(loginUrl.pathname, {
        body: { authRequestId: loginUrl.searchParams.get('authRequestID') },
      });
      expect(login.status).toBe(303);
      const tokens = await oc.authorizationCodeGrant(config, new URL(login.header('location')!), {
        pkceCodeVerifier: verifier,
        expectedState: 'st-2',
      });
      expect(tokens.claims()).toMatchObject({ sub: id, amr: ['cert'] });
      const served = await settle([login.header('request-id')!]);
      expect(served[0]!.clientAddress).toBe('127.0.0.6');

      // RFC 8705 §3 through the pass-through: the replica that terminates TLS sees the device's
      // certificate, whichever replica serves the call, and a copy of the token without it is refused.
      const thumbprint = createHash('sha256').update(new X509Certificate(tls.cert).raw).digest('base64url');
      const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1]!, 'base64url').toString());
      expect(claims.cnf).toEqual({ 'x5t#S256': thumbprint });
      const bearer = { headers: { authorization: `Bearer ${tokens.access_token}` } };
      const withCert = [];
      for (let i = 0; i < 3; i++) withCert.push(await mtls.get('/edge/client/v1/current-identity', bearer));
      const copied = await viaProxy('127.0.0.6').get('/edge/client/v1/current-identity', bearer);
      const refusedRefresh = await oauthErrorOf(
        oc.refreshTokenGrant(
          await oc.discovery(new URL(issuer), 'svc', undefined, oc.None(), {
            [oc.customFetch]: withoutCert.customFetch,
          }),
          tokens.refresh_token!,
        ),
      );
      const refreshed = await oc.refreshTokenGrant(config, tokens.refresh_token!);

      expect(withCert.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(
        new Set((await settle(withCert.map((r) => r.header('request-id')!))).map((s) => s.replica)).size,
      ).toBe(3);
      expect([copied.status, copied.header('www-authenticate')]).toEqual([
        401,
        'Bearer realm="svc-oidc", error="invalid", error_description="token is invalid"',
      ]);
      expect(refusedRefresh).toBe('invalid_grant');
      expect(
        JSON.parse(Buffer.from(refreshed.access_token.split('.')[1]!, 'base64url').toString()).cnf,
      ).toEqual({
        'x5t#S256': thumbprint,
      });
    } finally {
      await close();
      await withoutCert.close();
    }
  });

  test('clients at 127.0.0.2 and 127.0.0.3 have separate login failure counts and ceilings', async () => {
    const user = await passwordUser('replica-shared');
    const a = viaProxy('127.0.0.2');
    const b = viaProxy('127.0.0.3');
    const login = (c: HttpsClient, password: string) =>
      c.post('/edge/client/v1/authenticate?method=password', {
        body: { username: 'replica-shared', password },
      });
    for (let i = 0; i < 3; i++) expect((await login(a, 'wrong-password-1')).status).toBe(401);
    expect((await login(b, 'wrong-password-1')).status).toBe(401);

    // Counted per identity and client address in the database, whichever replica took the attempt.
    const counts = await failureCounts(user.id);
    expect(counts).toEqual({ '127.0.0.2': 3, '127.0.0.3': 1 });
    // And audited under each client's own address.
    const failedFrom = () =>
      auditEvents()
        .filter((e) => e.event === 'auth.login' && e.identityId === user.id && e.outcome === 'failure')
        .map((e) => e.sourceAddress)
        .sort();
    await waitFor(() => failedFrom().length >= 4, { what: 'audit events of the four failures' });
    expect(failedFrom()).toEqual(['127.0.0.2', '127.0.0.2', '127.0.0.2', '127.0.0.3']);

    // The hourly ceiling (100 per identity and address) reached by A: rather than 97 more Argon2
    // checks, the row says so. A is refused even with the right password; B still logs in.
    await withDatabase((knex) =>
      knex('login_address_failures')
        .where({ identity_id: user.id, client_address: '127.0.0.2' })
        .update({ in_window: 100 }),
    );
    expect((await login(a, user.password)).status).toBe(401);
    expect((await login(b, user.password)).status).toBe(200);
  });

  test('clients at 127.0.0.2 and 127.0.0.3 have separate rate limits on every replica', async () => {
    const a = viaProxy('127.0.0.2');
    const b = viaProxy('127.0.0.3');
    const token = (c: HttpsClient) =>
      c.post('/oidc/token', { form: { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'svc' } });
    // Burst 10 per process: A runs until three 429s in a row, one from each replica.
    let inARow = 0;
    for (let i = 0; i < 60 && inARow < 3; i++) inARow = (await token(a)).status === 429 ? inARow + 1 : 0;
    expect(inARow).toBe(3);
    const fromB = [await token(b), await token(b), await token(b)].map((r) => r.status);
    expect(fromB).not.toContain(429);
  });

  test('a direct connection that forges a header from an untrusted address is refused', async () => {
    const port = replicas[0]!.port;
    const handshakes = async (from: string, chunks: Buffer[]) => {
      const raw = await connectWithPreamble('127.0.0.1', port, { chunks, localAddress: from });
      const tls = tlsConnect({ socket: raw, ca, host: '127.0.0.1' });
      return new Promise<boolean>((resolve) => {
        tls.once('secureConnect', () => {
          tls.destroy();
          resolve(true);
        });
        tls.once('error', () => resolve(false));
        tls.once('close', () => resolve(false));
      });
    };
    expect(await handshakes('127.0.0.4', [proxyV2({ address: '203.0.113.50', port: 1 })])).toBe(false);
    // The same address without a header is an ordinary direct client; the proxy's with a header is fine.
    expect(await handshakes('127.0.0.4', [])).toBe(true);
    expect(await handshakes('127.0.0.1', [proxyV2({ address: '203.0.113.50', port: 1 })])).toBe(true);
    expect(replicas[0]!.output()).toContain('PROXY header from an untrusted address');
  });

  test('a replica stopped mid-run loses no flow', async () => {
    const user = await passwordUser('replica-failover');
    const client = viaProxy('127.0.0.7');
    const flow = async (stopBetween?: () => Promise<void>) => {
      const started = await startAuthorization(client, { method: 'password', redirectUri: REDIRECT_URI });
      await stopBetween?.();
      const login = await submitLogin(client, started, {
        body: { username: 'replica-failover', password: user.password },
      });
      const callback = await followToCallback(client, login, REDIRECT_URI);
      const tokens = await client.post('/oidc/token', {
        form: {
          grant_type: 'authorization_code',
          code: callback.code,
          redirect_uri: REDIRECT_URI,
          client_id: 'svc',
          code_verifier: started.pkce.verifier,
        },
      });
      expect(tokens.status).toBe(200);
      const refreshed = await client.post('/oidc/token', {
        form: { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, client_id: 'svc' },
      });
      expect(refreshed.status).toBe(200);
      const me = await client.get('/edge/client/v1/current-identity', {
        headers: { authorization: `Bearer ${refreshed.body.access_token}` },
      });
      expect(me.status).toBe(200);
      expect(me.body.data.id).toBe(user.id);
    };
    const stopped = replicas[1]!;
    // Begun on the three, finished on two: the replica stops between the authorization and the login.
    await flow(async () => {
      stopped.child.kill('SIGTERM');
      await stopped.exited;
    });
    for (let i = 0; i < 3; i++) await flow();
  });

  test('a replica that answers 503 on /health/ready gets no requests until it is ready again', async () => {
    const unready = 2;
    const others = [...replicas.keys()].filter((i) => i !== unready && replicas[i]!.child.exitCode === null);
    const probe = viaProxy('127.0.0.8');
    // From an untrusted address, without a PROXY header: the replica itself, not through HAProxy.
    const itself = createHttpsClient(replicas[unready]!.url, { ca, localAddress: '127.0.0.9' });
    /** Request ids of `n` readiness requests through the proxy, or false unless every one was 200. */
    const allReady = async (n: number) => {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const res = await probe.get('/health/ready');
        if (res.status !== 200) return false;
        ids.push(res.header('request-id')!);
      }
      return ids;
    };
    try {
      databaseRelay!.cut();
      // Its port still accepts and completes TLS handshakes, which is all a TCP check would see.
      const notReady = await waitFor(
        async () => {
          const res = await itself.get('/health/ready');
          return res.status === 503 && res;
        },
        { what: 'the replica without its database to say it is not ready' },
      );
      expect(notReady.body).toEqual({ status: 'unavailable', reason: 'the database does not answer' });
      // HAProxy's readiness check takes it out of the rotation; the others answer everything.
      const ids = await waitFor(() => allReady(3 * (others.length + 1)), {
        what: 'HAProxy to stop sending requests to the replica that is not ready',
        timeout: 30_000,
      });
      const served = await settle(ids);
      expect(new Set(served.map((s) => s.replica))).toEqual(new Set(others));
    } finally {
      databaseRelay!.restore();
      await itself.close();
    }
    // With its database back it is ready again, and back in the rotation after two good checks.
    const sent: string[] = [];
    await waitFor(
      async () => {
        const res = await probe.get('/health/ready');
        sent.push(res.header('request-id')!);
        const output = replicas[unready]!.output();
        return sent.some((id) => output.includes(`"requestId":"${id}"`));
      },
      { what: 'the replica to serve requests through HAProxy again', timeout: 30_000 },
    );
  });

  async function withDatabase<T>(fn: (knex: Knex) => Promise<T>): Promise<T> {
    const knex = knexFactory({ client: 'pg', connection: databaseUrl });
    try {
      return await fn(knex);
    } finally {
      await knex.destroy();
    }
  }

  async function failureCounts(identityId: string): Promise<Record<string, number>> {
    const rows = await withDatabase((knex) =>
      knex('login_address_failures').where({ identity_id: identityId }).select('client_address', 'in_window'),
    );
    return Object.fromEntries(
      rows.map((r: { client_address: string; in_window: number }) => [r.client_address, r.in_window]),
    );
  }
});
