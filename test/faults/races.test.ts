import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { generateClientKeyAndCsr } from '../../src/crypto/pki.js';
import { hashTokenId } from '../../src/crypto/token-id-hash.js';
import { createHttpsClient, type HttpsClient, type RequestOptions } from '../helpers/https-client.js';
import {
  exchangeCode,
  followToCallback,
  refreshTokens,
  startAuthorization,
  submitLogin,
} from '../helpers/oidc-client.js';
import {
  freePort,
  spawnController,
  twoAddressConfig,
  waitListening,
  type SpawnedController,
} from '../helpers/spawn-controller.js';
import { createTestDatabaseUrl, describeWithPostgres } from '../helpers/test-database.js';
import { timeStepAt, totpCode } from '../helpers/totp.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Races across two controller processes on one PostgreSQL database: each trial sends its
 * parallel requests half to one process and half to the other, and counts a trial exact when
 * what a client sees and what the database holds afterwards are exactly what one request would
 * have produced. 100 trials per race; FAULT_SCALE multiplies them (`npm run soak`) and
 * FAULTS_TRIALS sets every race's count.
 */
const SCALE = Number(process.env.FAULT_SCALE ?? 1);
const TRIALS = Number(process.env.FAULTS_TRIALS ?? 100 * SCALE);

// Two processes start (tsx, migrations, PKI); each race then runs its trials on a loaded machine.
jest.setTimeout(600_000 * Math.max(1, TRIALS / 100));

const ADMIN = { username: 'admin', password: 'admin-password-1' };
const MGMT = '/edge/management/v1';
const CLIENT = '/edge/client/v1';

/**
 * A client of the one issuer (A's address) whose requests reach the process behind `viaUrl`:
 * a load balancer's view of the deployment. Absolute URLs (redirects) keep their path and query.
 */
function routedClient(issuerUrl: string, viaUrl: string, ca: string): HttpsClient {
  const inner = createHttpsClient(viaUrl, { ca });
  const host = new URL(issuerUrl).host;
  const request = <T = any>(method: string, path: string, o: RequestOptions = {}) => {
    const relative = /^https?:/.test(path) ? `${new URL(path).pathname}${new URL(path).search}` : path;
    return inner.request<T>(method, relative, { ...o, headers: { host, ...o.headers } });
  };
  return {
    ...inner,
    baseUrl: issuerUrl,
    request,
    get: (p, o) => request('GET', p, o),
    post: (p, o) => request('POST', p, o),
    put: (p, o) => request('PUT', p, o),
    patch: (p, o) => request('PATCH', p, o),
    delete: (p, o) => request('DELETE', p, o),
  };
}

/** Runs `fn` over `items` with at most `width` at once. */
async function inParallel<T, R>(
  items: T[],
  width: number,
  fn: (item: T, i: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

const statuses = (rs: { status: number }[]) =>
  rs.reduce<Record<number, number>>((m, r) => ({ ...m, [r.status]: (m[r.status] ?? 0) + 1 }), {});

describeWithPostgres('races across two controller processes', () => {
  let db: { url: string; drop: () => Promise<void> };
  let sql: pg.Client;
  let a: SpawnedController;
  let b: SpawnedController;
  /** [via A, via B], both for A's issuer. */
  let via: [HttpsClient, HttpsClient];
  let admin: Record<string, string>;
  const dirs: string[] = [];
  const results: string[] = [];

  /** Password attempts judged on their password (not refused by the count or the lock), per log line. */
  let judgedPasswords = 0;
  /** Refused logins (INVALID_AUTH), judged or not: tells when a trial's log lines have all arrived. */
  let refusedLogins = 0;
  function countJudged(c: SpawnedController): void {
    for (const stream of [c.child.stdout!, c.child.stderr!]) {
      let partial = '';
      stream.on('data', (chunk: Buffer) => {
        const lines = (partial + chunk.toString()).split('\n');
        partial = lines.pop()!;
        for (const line of lines) {
          if (line.includes('"code":"INVALID_AUTH"')) refusedLogins++;
          if (line.includes('"detail":"wrong password"')) judgedPasswords++;
        }
      });
    }
  }

  /** The i-th of a trial's parallel requests goes to A when i is even, to B when odd. */
  const spread = (i: number) => via[i % 2]!;

  beforeAll(async () => {
    db = (await createTestDatabaseUrl())!;
    sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    const [portA, portB] = [await freePort(), await freePort()];
    const env = (own: number, other: number) => {
      const dir = mkdtempSync(join(tmpdir(), 'svc-races-'));
      dirs.push(dir);
      return {
        SVC_DATA_DIR: dir,
        DATABASE_URL: db.url,
        SVC_CONFIG: twoAddressConfig(dir, own, other),
        SVC_RATE_LIMITS_ENABLED: 'false',
      };
    };
    a = await spawnController(env(portA, portB), portA);
    await waitListening(a);
    b = await spawnController(env(portB, portA), portB);
    await waitListening(b);
    for (const c of [a, b]) countJudged(c);
    via = [routedClient(a.url, a.url, a.ca()), routedClient(a.url, b.url, a.ca())];
    const login = await via[0].post(`${MGMT}/authenticate?method=password`, { body: ADMIN });
    admin = { 'svc-session': login.body.data.token };
  });

  afterAll(async () => {
    await Promise.all(via?.map((c) => c.close()) ?? []);
    for (const c of [a, b]) c?.child.kill('SIGTERM');
    await Promise.all([a?.exited, b?.exited]);
    await sql?.end();
    await db?.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    process.stdout.write(`\n${results.join('\n')}\n`);
  });

  let trialsStartedAt = 0;
  /** Marks the end of a race's set-up: the figure printed is the time its trials took. */
  const trialsStart = () => (trialsStartedAt = Date.now());

  function report(race: string, exact: number, notes: string[]): void {
    const seconds = ((Date.now() - trialsStartedAt) / 1000).toFixed(1);
    const line = `${race}: ${exact}/${TRIALS} trials exact (trials took ${seconds} s)`;
    results.push(line);
    console.log([line, ...notes.slice(0, 5)].join('\n  '));
  }

  async function createIdentity(body: Record<string, unknown>): Promise<{ id: string; enrollment: any }> {
    const created = await via[0].post(`${MGMT}/identities`, {
      headers: admin,
      body: { isAdmin: false, ...body },
    });
    if (created.status !== 201) throw new Error(`create failed: ${created.status} ${created.text}`);
    const id = created.body.data.id as string;
    const detail = await via[1].get(`${MGMT}/identities/${id}`, { headers: admin });
    return { id, enrollment: detail.body.data.enrollment };
  }

  async function userWithPassword(name: string, authPolicyId?: string) {
    const { id, enrollment } = await createIdentity({
      name,
      enrollment: { updb: name },
      ...(authPolicyId ? { authPolicyId } : {}),
    });
    const password = `Pw-${name}-12345`;
    const enrolled = await via[0].post(`${CLIENT}/enroll/updb?token=${enrollment.updb.token}`, {
      body: { password },
    });
    if (enrolled.status !== 200) throw new Error(`enroll failed: ${enrolled.status} ${enrolled.text}`);
    return { id, username: name, password };
  }

  async function createPolicy(body: Record<string, unknown>): Promise<string> {
    const res = await via[0].post(`${MGMT}/auth-policies`, { headers: admin, body });
    if (res.status !== 201) throw new Error(`policy create failed: ${res.status} ${res.text}`);
    return res.body.data.id as string;
  }

  /** A finished password login on A's issuer, started on one process and finished on the other. */
  async function codeFor(user: { username: string; password: string }, trial: number) {
    const started = await startAuthorization(spread(trial), { method: 'password' });
    const login = await submitLogin(spread(trial + 1), started, {
      body: { username: user.username, password: user.password },
    });
    const callback = await followToCallback(spread(trial), login);
    return { code: callback.code, verifier: started.pkce.verifier };
  }

  // RFC 6749 §4.1.2: a code used more than once is refused, and the tokens issued from it are
  // revoked. A redemption that reads the code after the winner consumed it is such a second use
  // and revokes the grant, possibly while the winner is still issuing; the winner read the grant
  // and its facts with the code, before its consume, so it still answers, with tokens that the
  // revocation has made dead. A trial is exact with exactly one success, whose tokens are refused
  // everywhere when a replay revoked the grant.
  /** The revocation's tokens: the refresh token refused at once, the access token on both processes. */
  async function deadOnBothSides(tokens: { access_token: string; refresh_token: string }): Promise<boolean> {
    const refreshed = await refreshTokens(spread(0), tokens.refresh_token);
    if (refreshed.status !== 400 || refreshed.body.error !== 'invalid_grant') return false;
    const bearer = { headers: { authorization: `Bearer ${tokens.access_token}` } };
    for (const side of [0, 1]) {
      const refused = await waitFor(
        async () => (await spread(side).get(`${CLIENT}/current-api-session`, bearer)).status === 401,
        { timeout: 2_000, what: 'the revoked access token refused' },
      ).catch(() => false);
      if (!refused) return false;
    }
    return true;
  }

  test('16 parallel redemptions of one authorization code: exactly one succeeds', async () => {
    const user = await userWithPassword('code-racer');
    trialsStart();
    let exact = 0;
    let revokedAfterWinner = 0;
    const notes: string[] = [];
    await inParallel(
      Array.from({ length: TRIALS }, (_, t) => t),
      2,
      async (t) => {
        const { code, verifier } = await codeFor(user, t);
        const answers = await Promise.all(
          Array.from({ length: 16 }, (_, i) => exchangeCode(spread(i + t), { code, verifier })),
        );
        const won = answers.filter((r) => r.status === 200).length;
        const refused = answers.filter((r) => r.status === 400 && r.body.error === 'invalid_grant').length;
        const { rows } = await sql.query(
          "SELECT consumed_at FROM oidc_payloads WHERE model = 'AuthorizationCode' AND id = $1",
          [hashTokenId(code)],
        );
        const revoked = rows.length === 0;
        const winner = answers.find((r) => r.status === 200);
        if (won === 1 && refused === 15 && (!revoked || (await deadOnBothSides(winner!.body)))) {
          exact++;
          if (revoked) revokedAfterWinner++;
        } else notes.push(`trial ${t}: ${JSON.stringify(statuses(answers))}, grant revoked: ${revoked}`);
      },
    );
    report('code redemption (16 parallel)', exact, [
      `${revokedAfterWinner} of the winners' grants were then revoked by a late replay`,
      ...notes,
    ]);
    expect(exact).toBe(TRIALS);
  });

  test('8 parallel refreshes of one refresh token: at most one succeeds, never a second live token', async () => {
    const user = await userWithPassword('refresh-racer');
    trialsStart();
    let exact = 0;
    let oneWon = 0;
    const notes: string[] = [];
    const liveTokens = async () =>
      new Set(
        (
          await sql.query(
            "SELECT id FROM oidc_payloads WHERE model = 'RefreshToken' AND account_id = $1 AND consumed_at IS NULL",
            [user.id],
          )
        ).rows.map((r) => r.id as string),
      );
    // One trial at a time: the live set of the identity is compared before and after.
    for (let t = 0; t < TRIALS; t++) {
      const { code, verifier } = await codeFor(user, t);
      const tokens = await exchangeCode(spread(t), { code, verifier });
      const refreshToken = tokens.body.refresh_token as string;
      const before = await liveTokens();
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => refreshTokens(spread(i + t), refreshToken)),
      );
      const after = await liveTokens();
      const winners = answers.filter((r) => r.status === 200);
      const refused = answers.filter((r) => r.status === 400 && r.body.error === 'invalid_grant').length;
      const added = [...after].filter((id) => !before.has(id));
      const winnerLive = winners.every((w) => after.has(hashTokenId(w.body.refresh_token)));
      const ok =
        winners.length <= 1 &&
        refused === 8 - winners.length &&
        added.length <= winners.length &&
        (added.length === 0 || winnerLive) &&
        !after.has(hashTokenId(refreshToken));
      if (winners.length === 1) oneWon++;
      if (ok) exact++;
      else notes.push(`trial ${t}: ${JSON.stringify(statuses(answers))}, ${added.length} new live token(s)`);
    }
    report('refresh rotation (8 parallel)', exact, [
      `${oneWon} trials had one success, ${TRIALS - oneWon} none (a loser saw the rotation and revoked the grant)`,
      ...notes,
    ]);
    expect(exact).toBe(TRIALS);
  });

  test('20 parallel uses of one enrollment token: one certificate, one authenticator', async () => {
    // One key and CSR for every trial: each use is signed anew, so duplicates are not what refuses.
    const { csrPem } = await generateClientKeyAndCsr({ commonName: 'race-device' });
    const devices = await inParallel(
      Array.from({ length: TRIALS }, (_, t) => t),
      4,
      async (t) => {
        const { id, enrollment } = await createIdentity({
          name: `ott-racer-${t}`,
          type: 'Device',
          enrollment: { ott: true },
        });
        return { id, token: enrollment.ott.token as string };
      },
    );
    trialsStart();
    let exact = 0;
    const notes: string[] = [];
    await inParallel(devices, 2, async (device, t) => {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          spread(i + t).post(`${CLIENT}/enroll/ott`, { body: { token: device.token, clientCsr: csrPem } }),
        ),
      );
      const won = answers.filter((r) => r.status === 200).length;
      const refused = answers.filter(
        (r) => r.status >= 400 && r.status < 500 && r.body.error?.code === 'INVALID_ENROLLMENT_TOKEN',
      ).length;
      const { rows } = await sql.query(
        'SELECT count(*)::int AS n FROM authenticators WHERE identity_id = $1',
        [device.id],
      );
      if (won === 1 && refused === 19 && rows[0].n === 1) exact++;
      else notes.push(`trial ${t}: ${JSON.stringify(statuses(answers))}, ${rows[0].n} authenticator(s)`);
    });
    report('enrollment token (20 parallel)', exact, notes);
    expect(exact).toBe(TRIALS);
  });

  test('64 parallel wrong passwords against maxAttempts 5: at most 5 judged before the lock, which holds', async () => {
    const policyId = await createPolicy({
      name: 'race-five-attempts',
      primary: { updb: { maxAttempts: 5, lockoutDurationMinutes: 60 } },
    });
    const users = await inParallel(
      Array.from({ length: TRIALS }, (_, t) => t),
      4,
      (t) => userWithPassword(`lockout-racer-${t}`, policyId),
    );
    // Every refusal is the same 401 to the client (no oracle); the log says which were judged.
    trialsStart();
    let exact = 0;
    const notes: string[] = [];
    // One trial at a time: the log lines of a trial are told apart by counting before and after.
    for (const [t, user] of users.entries()) {
      const [judgedBefore, refusedBefore] = [judgedPasswords, refusedLogins];
      const answers = await Promise.all(
        Array.from({ length: 64 }, (_, i) =>
          spread(i + t).post(`${CLIENT}/authenticate?method=password`, {
            body: { username: user.username, password: `wrong-${i}` },
          }),
        ),
      );
      const right = await spread(t).post(`${CLIENT}/authenticate?method=password`, {
        body: { username: user.username, password: user.password },
      });
      await waitFor(() => refusedLogins - refusedBefore >= 65, { what: "the trial's log lines" });
      const judgedNow = judgedPasswords - judgedBefore;
      const { rows } = await sql.query(
        "SELECT count(*)::int AS n FROM revocations WHERE kind = 'identity' AND subject = $1",
        [user.id],
      );
      const all401 = answers.every((r) => r.status === 401);
      if (all401 && judgedNow <= 5 && right.status === 401 && rows[0].n === 1) exact++;
      else
        notes.push(
          `trial ${t}: ${JSON.stringify(statuses(answers))}, ${judgedNow} judged, right password ${right.status}, ${rows[0].n} lock(s)`,
        );
    }
    report('password lockout (64 parallel, maxAttempts 5)', exact, notes);
    expect(exact).toBe(TRIALS);
  });

  test('8 parallel submissions of one valid TOTP code: one login completes', async () => {
    const users = await inParallel(
      Array.from({ length: TRIALS }, (_, t) => t),
      4,
      async (t) => {
        const user = await userWithPassword(`totp-racer-${t}`);
        const session = await spread(t).post(`${CLIENT}/authenticate?method=password`, {
          body: { username: user.username, password: user.password },
        });
        const headers = { 'svc-session': session.body.data.token as string };
        const started = await spread(t + 1).post(`${CLIENT}/current-identity/mfa`, { headers });
        if (started.status !== 201) throw new Error(`mfa start failed: ${started.status} ${started.text}`);
        const url = started.body.data.provisioningUrl as string;
        const verified = await spread(t).post(`${CLIENT}/current-identity/mfa/verify`, {
          headers,
          body: { code: await totpCode(url, timeStepAt()) },
        });
        if (verified.status !== 200)
          throw new Error(`mfa verify failed: ${verified.status} ${verified.text}`);
        return { ...user, url };
      },
    );
    trialsStart();
    let exact = 0;
    const notes: string[] = [];
    await inParallel(users, 2, async (user, t) => {
      const started = await startAuthorization(spread(t), { method: 'password' });
      const partial = await submitLogin(spread(t + 1), started, {
        body: { username: user.username, password: user.password },
      });
      if (partial.status !== 200)
        throw new Error(`login did not stop at TOTP: ${partial.status} ${partial.text}`);
      // The next step's code: later than the one that verified the enrollment, whenever this runs.
      const code = await totpCode(user.url, timeStepAt() + 1);
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          spread(i + t).post('/oidc/login/totp', { body: { id: started.authRequestId, code } }),
        ),
      );
      const completed = answers.filter(
        (r) => r.status === 303 && /[?&]code=/.test(r.header('location') ?? ''),
      );
      const refused = answers.filter((r) => r.status >= 400 && r.status < 500).length;
      let redeemed = false;
      if (completed.length === 1) {
        const callback = await followToCallback(spread(t), completed[0]!);
        const tokens = await exchangeCode(spread(t + 1), {
          code: callback.code,
          verifier: started.pkce.verifier,
        });
        redeemed = tokens.status === 200;
      }
      if (completed.length === 1 && refused === 7 && redeemed) exact++;
      else notes.push(`trial ${t}: ${JSON.stringify(statuses(answers))}`);
    });
    report('TOTP code (8 parallel)', exact, notes);
    expect(exact).toBe(TRIALS);
  });

  /**
   * Four logins of one identity at once: two legacy, two OIDC (each auth request begun on one
   * process and completed on the other), spread over both processes.
   */
  async function parallelLogins(user: { username: string; password: string }, t: number) {
    const credentials = { username: user.username, password: user.password };
    const started = await Promise.all([
      startAuthorization(spread(t), { method: 'password' }),
      startAuthorization(spread(t + 1), { method: 'password' }),
    ]);
    const answers = await Promise.all([
      spread(t).post(`${CLIENT}/authenticate?method=password`, { body: credentials }),
      spread(t + 1).post(`${CLIENT}/authenticate?method=password`, { body: credentials }),
      submitLogin(spread(t + 1), started[0], { body: credentials }),
      submitLogin(spread(t), started[1], { body: credentials }),
    ]);
    return { started, legacy: answers.slice(0, 2), oidc: answers.slice(2), answers };
  }

  /** The identity's sessions a session limit counts: live, with no second factor still owed. */
  const countedSessions = async (identityId: string) =>
    (
      await sql.query(
        'SELECT id FROM api_sessions WHERE identity_id = $1 AND expires_at > now() AND (NOT mfa_required OR mfa_complete)',
        [identityId],
      )
    ).rows.map((r) => r.id as string);

  const completedOidc = (r: { status: number; header(name: string): string | undefined }) =>
    r.status === 303 && /[?&]code=/.test(r.header('location') ?? '');

  test('4 parallel logins of one identity under max 2, evictOldest: every login succeeds, 2 sessions remain, the newest', async () => {
    const policyId = await createPolicy({
      name: 'race-two-evict',
      sessions: { max: 2, onLimit: 'evictOldest' },
    });
    const user = await userWithPassword('limit-evict-racer', policyId);
    trialsStart();
    let exact = 0;
    const notes: string[] = [];
    // One trial at a time: the sessions before and after are compared.
    for (let t = 0; t < TRIALS; t++) {
      const before = new Set(await countedSessions(user.id));
      const { legacy, oidc, answers } = await parallelLogins(user, t);
      const after = await countedSessions(user.id);
      const succeeded = legacy.every((r) => r.status === 200) && oidc.every(completedOidc);
      if (succeeded && after.length === 2 && after.every((id) => !before.has(id))) exact++;
      else notes.push(`trial ${t}: ${JSON.stringify(statuses(answers))}, ${after.length} session(s) counted`);
    }
    report('session limit, evictOldest (4 parallel, max 2)', exact, notes);
    expect(exact).toBe(TRIALS);
  });

  test('4 parallel logins of one identity under max 2, refuse: exactly 2 succeed, 2 are refused', async () => {
    const policyId = await createPolicy({ name: 'race-two-refuse', sessions: { max: 2, onLimit: 'refuse' } });
    const user = await userWithPassword('limit-refuse-racer', policyId);
    trialsStart();
    let exact = 0;
    const notes: string[] = [];
    for (let t = 0; t < TRIALS; t++) {
      const { started, legacy, oidc, answers } = await parallelLogins(user, t);
      const counted = await countedSessions(user.id);
      const won = legacy.filter((r) => r.status === 200).length + oidc.filter(completedOidc).length;
      const refused = answers.filter(
        (r) => r.status === 403 && r.body?.error?.code === 'SESSION_LIMIT_REACHED',
      ).length;
      if (won === 2 && refused === 2 && counted.length === 2) exact++;
      else
        notes.push(`trial ${t}: ${JSON.stringify(statuses(answers))}, ${counted.length} session(s) counted`);
      // The winners log out, as their users would, so that the next trial starts from none.
      for (const r of legacy.filter((l) => l.status === 200)) {
        await spread(t).delete(`${CLIENT}/current-api-session`, {
          headers: { 'svc-session': r.body.data.token },
        });
      }
      for (const [i, r] of oidc.entries()) {
        if (!completedOidc(r)) continue;
        const callback = await followToCallback(spread(t), r);
        const tokens = await exchangeCode(spread(t + 1), {
          code: callback.code,
          verifier: started[i]!.pkce.verifier,
        });
        await spread(t).delete(`${CLIENT}/current-api-session`, {
          headers: { authorization: `Bearer ${tokens.body.access_token}` },
        });
      }
      const left = await countedSessions(user.id);
      if (left.length > 0) throw new Error(`trial ${t}: ${left.length} session(s) left after logging out`);
    }
    report('session limit, refuse (4 parallel, max 2)', exact, notes);
    expect(exact).toBe(TRIALS);
  });

  // Last: every trial publishes a key, and they stay published for the grace period.
  test('parallel key rotations: one new key', async () => {
    const keyCount = async () =>
      (await sql.query('SELECT count(*)::int AS n FROM signing_keys')).rows[0].n as number;
    trialsStart();
    let exact = 0;
    const notes: string[] = [];
    for (let t = 0; t < TRIALS; t++) {
      const before = await keyCount();
      const answers = await Promise.all(
        Array.from({ length: 4 }, (_, i) => spread(i + t).post(`${MGMT}/keys/rotate`, { headers: admin })),
      );
      const added = (await keyCount()) - before;
      const kids = new Set(answers.map((r) => r.body?.data?.kid));
      if (answers.every((r) => r.status === 200) && kids.size === 1 && added === 1) exact++;
      else
        notes.push(
          `trial ${t}: ${JSON.stringify(statuses(answers))}, ${kids.size} kid(s), ${added} key(s) added`,
        );
    }
    report('key rotation (4 parallel)', exact, notes);
    expect(exact).toBe(TRIALS);
  });
});
