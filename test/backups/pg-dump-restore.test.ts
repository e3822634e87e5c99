import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { createSecretBox } from '../../src/crypto/secret-box.js';
import { browserLike, browserOn, signIn, type BrowserLike } from '../account/account-fixtures.js';
import { runSvc } from '../cli/run-svc.js';
import { passwordLogin, refreshTokens, type TokenSet } from '../helpers/oidc-client.js';
import { describeWithOwnCluster, startPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { pgDumpProgramsFor } from '../helpers/pg-dump-programs.js';
import { freePort, spawnController } from '../helpers/spawn-controller.js';
import { startTestServer } from '../helpers/test-server.js';
import { secretFromUrl, totpCode } from '../helpers/totp.js';
import {
  bearer,
  certLogin,
  enrollOtt,
  MASTER_KEY,
  OTHER_KEY,
  session,
  snapshot,
  WRONG_KEY_LINE,
  type Device,
} from './backup-fixtures.js';
import {
  CLIENT,
  enrolledUpdbUser,
  identityDetail,
  managementApi,
  pendingEnrollment,
} from '../identities/identity-fixtures.js';

const run = promisify(execFile);

describeWithOwnCluster('pg_dump of a running deployment, pg_restore into a new cluster', () => {
  const home = mkdtempSync(join(tmpdir(), 'svc-backup-'));
  let port: number;
  let cluster: PgCluster;
  let dumpFile: string;
  let dumpTakenAt: Date;
  let before: Awaited<ReturnType<typeof snapshot>>;
  let restoredWithStep: string;
  const users = {} as Record<'alice' | 'bob' | 'carol', { id: string; password: string; token: string }>;
  const secrets = { totp: '', signingKeyDs: [] as string[] };
  let device: Device;
  let redeemedLater: { identityId: string; token: string };
  /** Issued before the dump and left alone. */
  let kept: { oidc: TokenSet; legacyToken: string; browser: BrowserLike };
  /** Issued before the dump, ended after it. */
  let endedLater: { refreshToken: string; legacyToken: string };

  const restoredDatabase = async (name: string): Promise<string> => {
    const admin = await cluster.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = cluster.url.replace(/\/postgres$/, `/${name}`);
    const { pgRestore } = await pgDumpProgramsFor(cluster.url);
    await run(pgRestore, ['--no-owner', '--exit-on-error', '-d', url, dumpFile]);
    return url;
  };
  const restoredServer = (databaseUrl: string) =>
    startTestServer({ databaseUrl, env: { SVC_ADDRESS: `127.0.0.1:${port}` } });
  const afterRestoreStep = (databaseUrl: string, masterKey = MASTER_KEY) =>
    runSvc(['controller', 'after-restore'], {
      home,
      env: { DATABASE_URL: databaseUrl, SVC_MASTER_KEY: masterKey, SVC_DATA_DIR: home },
    });

  beforeAll(async () => {
    // The restored controllers answer on the same address as the original: the issuer (and with
    // it every token's `iss`) is the same, so a token refused after the restore is refused for
    // what the restore did, not for a changed address.
    port = await freePort();
    const source = await startTestServer({ env: { SVC_ADDRESS: `127.0.0.1:${port}` } });
    const api = managementApi(source, await source.adminToken());
    for (const name of ['alice', 'bob', 'carol'] as const)
      users[name] = await enrolledUpdbUser(source, api, name);
    const enrolled = await pendingEnrollment(api, 'device-1', { ott: true });
    device = { identityId: enrolled.identityId, ...(await enrollOtt(source, enrolled.token, 'device-1')) };
    redeemedLater = await pendingEnrollment(api, 'device-2', { ott: true });
    const mfa = await source.client.post(`${CLIENT}/current-identity/mfa`, session(users.carol.token));
    secrets.totp = secretFromUrl(mfa.body.data.provisioningUrl);
    const verified = await source.client.post(`${CLIENT}/current-identity/mfa/verify`, {
      ...session(users.carol.token),
      body: { code: await totpCode(secrets.totp) },
    });
    expect(verified.status).toBe(200);
    expect((await api.post('/keys/rotate')).status).toBe(200);
    const box = createSecretBox(Buffer.from(MASTER_KEY, 'base64'));
    for (const row of await source.app.knex('signing_keys').select('private_jwk_enc')) {
      secrets.signingKeyDs.push((JSON.parse(box.open(row.private_jwk_enc)) as { d: string }).d);
    }
    const browser = browserOn(source);
    await signIn(browser, 'alice', users.alice.password);
    kept = {
      oidc: (await passwordLogin(source.client, 'alice', users.alice.password)).tokens,
      legacyToken: users.alice.token,
      browser,
    };
    const later = (await passwordLogin(source.client, 'alice', users.alice.password)).tokens;
    const legacy = await source.client.post(`${CLIENT}/authenticate?method=password`, {
      body: { username: 'alice', password: users.alice.password },
    });
    endedLater = { refreshToken: later.refresh_token!, legacyToken: legacy.body.data.token };
    before = await snapshot(source, api);
    expect(before.kids).toHaveLength(2);

    // A cluster that has served for a while has used far more transaction ids than the new one
    // the dump goes to.
    const burner = new pg.Client({ connectionString: source.databaseUrl });
    await burner.connect();
    await burner.query('SET synchronous_commit = off');
    await burner.query(
      'DO $$BEGIN FOR i IN 1..20000 LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END$$',
    );
    await burner.end();

    // The dump, taken while the controller serves.
    const { pgDump } = await pgDumpProgramsFor(source.databaseUrl!);
    dumpFile = join(home, 'svc.dump');
    dumpTakenAt = new Date();
    await run(pgDump, ['-Fc', '-d', source.databaseUrl!, '-f', dumpFile]);

    // After the dump: an identity deleted, a refresh token revoked, a session ended, an enrollment redeemed.
    expect((await api.delete(`/identities/${users.bob.id}`)).status).toBe(200);
    const revoked = await source.client.post('/oidc/revoke', {
      form: { token: endedLater.refreshToken, client_id: 'svc' },
    });
    expect(revoked.status).toBe(200);
    expect((await refreshTokens(source.client, endedLater.refreshToken)).body.error).toBe('invalid_grant');
    const loggedOut = await source.client.delete(
      `${CLIENT}/current-api-session`,
      session(endedLater.legacyToken),
    );
    expect(loggedOut.status).toBe(200);
    await enrollOtt(source, redeemedLater.token, 'device-2');
    await source.close();
    cluster = await startPgCluster();
  }, 300_000);
  afterAll(async () => {
    await kept?.browser.close();
    await cluster?.destroy();
  });

  test('restored as it is: the same identities, keys and CA, and what ended after the dump is back', async () => {
    const restored = await restoredServer(await restoredDatabase('restored_plain'));
    try {
      const api = managementApi(restored, await restored.adminToken());
      expect(await snapshot(restored, api)).toEqual(before);
      expect(before.names).toContain('bob');
      expect((await certLogin(restored, device)).status).toBe(200);
      // The enrollment redeemed after the dump can be redeemed again; the revoked refresh token
      // and the ended session work again: this is what the restore step is for.
      expect((await identityDetail(api, redeemedLater.identityId)).enrollment.ott.token).toBe(
        redeemedLater.token,
      );
      expect((await refreshTokens(restored.client, endedLater.refreshToken)).status).toBe(200);
      const ended = await restored.client.get(
        `${CLIENT}/current-api-session`,
        session(endedLater.legacyToken),
      );
      expect(ended.status).toBe(200);
    } finally {
      await restored.close();
    }
  }, 180_000);

  test('after the restore step every session and token issued before it is refused; identities, CA and new logins work', async () => {
    restoredWithStep = await restoredDatabase('restored_step');
    const step = await afterRestoreStep(restoredWithStep);
    expect(step.code).toBe(0);
    expect(step.stdout).toMatch(
      /^after restore: ended \d+ API sessions?, \d+ OIDC sessions?, \d+ grants?, [2-9] refresh tokens, \d+ unredeemed codes?, 1 account page session; signing key \S+ replaces 2 restored keys; the restored data ends about \S+ \(its newest audit event\); audit trail renumbered for this cluster\n$/,
    );
    const restored = await restoredServer(restoredWithStep);
    try {
      const { client } = restored;
      expect((await refreshTokens(client, kept.oidc.refresh_token!)).body.error).toBe('invalid_grant');
      expect((await refreshTokens(client, endedLater.refreshToken)).body.error).toBe('invalid_grant');
      expect((await client.get(`${CLIENT}/current-identity`, bearer(kept.oidc.access_token))).status).toBe(
        401,
      );
      expect((await client.get('/oidc/userinfo', bearer(kept.oidc.access_token))).status).toBe(401);
      expect((await client.get(`${CLIENT}/current-api-session`, session(kept.legacyToken))).status).toBe(401);
      expect(
        (await client.get(`${CLIENT}/current-api-session`, session(endedLater.legacyToken))).status,
      ).toBe(401);
      const browser = browserLike({ baseUrl: restored.url, ca: restored.ca, jar: kept.browser.jar });
      const page = await browser.get('/account/');
      await browser.close();
      expect(page.text).toContain('<form method="post" action="/account/login">');
      expect(page.text).not.toContain('alice');

      const fresh = (await passwordLogin(client, 'alice', users.alice.password)).tokens;
      const me = await client.get(`${CLIENT}/current-identity`, bearer(fresh.access_token));
      expect([me.status, me.body.data?.name]).toEqual([200, 'alice']);
      expect((await client.get('/oidc/userinfo', bearer(fresh.access_token))).body.sub).toBe(users.alice.id);
      expect((await certLogin(restored, device)).status).toBe(200);
      const api = managementApi(restored, await restored.adminToken());
      const after = await snapshot(restored, api);
      expect({ ca: after.ca, names: after.names }).toEqual({ ca: before.ca, names: before.names });
      expect(after.kids).toHaveLength(1);
      expect(before.kids).not.toContain(after.kids[0]);

      const restoredEvents = await api.get('/audit-events?filter=event = "database.restored"');
      expect(restoredEvents.body.data).toHaveLength(1);
      expect(restoredEvents.body.data[0].details).toMatchObject({ kid: after.kids[0], keysWithdrawn: 2 });
      // The restored trail is readable, and new events follow it, although this cluster's
      // transaction ids are lower than the dumped ones.
      const created = await api.get('/audit-events?filter=event = "identity.created"&limit=50');
      expect(created.body.data.map((e: { identityId: string }) => e.identityId)).toEqual(
        expect.arrayContaining([users.alice.id, users.bob.id, device.identityId]),
      );
      const [newest] = (await api.get('/audit-events?limit=1')).body.data;
      expect(new Date(newest.occurredAt).getTime()).toBeGreaterThan(dumpTakenAt.getTime());
    } finally {
      await restored.close();
    }
  }, 180_000);

  test('the dump holds no private key and no secret in the clear', async () => {
    const { pgRestore } = await pgDumpProgramsFor(cluster.url);
    // The custom format is compressed: its SQL text is what anyone holding the file can read.
    const { stdout: text } = await run(pgRestore, ['-f', '-', dumpFile], { maxBuffer: 256 * 1024 * 1024 });
    expect(text).toContain('carol');
    expect(text).toContain(before.kids[0]);
    expect(text).not.toContain('PRIVATE KEY');
    expect(secrets.totp).toMatch(/^[A-Z2-7]{32}$/);
    expect(text).not.toContain(secrets.totp);
    expect(secrets.signingKeyDs).toHaveLength(2);
    for (const d of secrets.signingKeyDs) expect(text).not.toContain(d);
    for (const token of [kept.oidc.refresh_token!, kept.legacyToken, redeemedLater.token]) {
      expect(text).not.toContain(token);
    }
  });

  test('another master key is refused with one line, by a controller and by the restore step', async () => {
    const controller = await spawnController({
      SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-backup-wrong-')),
      DATABASE_URL: restoredWithStep,
      SVC_MASTER_KEY: OTHER_KEY,
    });
    expect(await controller.exited).toBe(1);
    const lines = controller
      .output()
      .split('\n')
      .filter((l) => l.includes('master key'));
    expect(lines).toEqual([`svc controller failed to start: ${WRONG_KEY_LINE}`]);

    const kidsBefore = async () => {
      const c = new pg.Client({ connectionString: restoredWithStep });
      await c.connect();
      const { rows } = await c.query('SELECT kid FROM signing_keys');
      await c.end();
      return rows.map((r) => r.kid as string);
    };
    const kids = await kidsBefore();
    const step = await afterRestoreStep(restoredWithStep, OTHER_KEY);
    expect(step.code).toBe(1);
    expect(step.stdout).toBe('');
    expect(step.stderr).toBe(`svc controller after-restore refused: ${WRONG_KEY_LINE}\n`);
    expect(await kidsBefore()).toEqual(kids);
  }, 180_000);
  test('the restore step refuses while a controller is connected to the database, and changes nothing', async () => {
    const url = await restoredDatabase('restored_running');
    const running = await restoredServer(url);
    try {
      const kids = async () => {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        const { rows } = await c.query('SELECT kid FROM signing_keys ORDER BY kid');
        await c.end();
        return rows.map((r) => r.kid as string);
      };
      const before = await kids();
      const step = await afterRestoreStep(url);
      expect(step.code).toBe(1);
      expect(step.stderr).toMatch(
        /^svc controller after-restore refused: controllers are still connected to this database \(\d+ connections?\): stop every instance, then run this step\n$/,
      );
      expect(await kids()).toEqual(before);
      // The controller still serves the sessions the step would have ended.
      const api = managementApi(running, await running.adminToken());
      expect((await api.get('/identities')).status).toBe(200);
    } finally {
      await running.close();
    }
  }, 180_000);
});
