// A rolling upgrade, run for real: the previous release (built from this repository's history,
// see test/helpers/previous-release.ts) and the current code as two processes on one PostgreSQL
// database behind one round-robin address. The previous release migrates the empty database
// first, the current code migrates on; then flows hop between them, some steps sent to one
// process's own port, some through the front, and the previous release is restarted mid-run on
// the migrated database while traffic continues. Nothing may fail or be lost.
import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import pg from 'pg';
import * as oc from 'openid-client';
import { compatibilityLevel, levelIsAbove } from '../helpers/compatibility-level.js';
import { describeWithPreviousRelease, type Release } from '../helpers/previous-release.js';
import { checkoutRelease, type ReleaseCheckout } from '../helpers/release-checkout.js';
import {
  startUpgradePair,
  ADMIN_PASSWORD,
  type UpgradePair,
  type UpgradeSide,
} from '../helpers/upgrade-pair.js';
import {
  apiLogin,
  createPasswordUser,
  loginAcross,
  via,
  whoAmI,
  type Hop,
  type PasswordUser,
} from '../helpers/upgrade-flows.js';
import { waitFor } from '../helpers/wait-for.js';
import { startFrontLoad } from '../helpers/front-load.js';

// Bounds far above a run on two busy cores; beforeAll has a longer one of its own, for an `npm ci`
// of another lock file on a cold cache.
jest.setTimeout(300_000);

const MGMT = '/edge/management/v1';
/** Rows the janitors must remove (expired past every margin) and rows they must keep. */
const EXPIRED = 'upgrade-expired-';
const LIVE = 'upgrade-live-';

describeWithPreviousRelease(
  'a rolling upgrade from the previous release on one PostgreSQL database',
  (previous) => {
    let release: Release;
    let checkout: ReleaseCheckout | undefined;
    let pair: UpgradePair;
    let prev: UpgradeSide;
    let cur: UpgradeSide;
    let admin: Record<string, string>;
    let adminId: string;
    let levelRaised = false;
    /** What the refusal test saw, where it ran. */
    let refusal: string | undefined;
    const users: PasswordUser[] = [];
    /** Credentials revoked on one process, checked again on the restarted previous release. */
    const revoked: ({ bearer: string } | { session: string })[] = [];
    const tally = {
      logins: 0,
      apiLogins: 0,
      refreshes: 0,
      revocations: 0,
      identityChanges: 0,
      frontRequests: 0,
    };
    const phases = { started: 0, finished: 0, failures: 0 };
    const began = Date.now();

    /** The two orders of the processes: each step of a flow on one, the next on the other. */
    const orders = (): [UpgradeSide, UpgradeSide][] => [
      [prev, cur],
      [cur, prev],
    ];

    /** A test of the mixed run, which is not run where the previous release may not run at all. */
    function phase(title: string, fn: () => Promise<void>): void {
      test(title, async () => {
        if (levelRaised) return;
        phases.started++;
        await fn();
        phases.finished++;
      });
    }

    beforeAll(async () => {
      const found = previous();
      release = found.release;
      checkout = checkoutRelease(process.cwd(), release);
      process.stderr.write(
        `previous release ${release.version} (${release.commit.slice(0, 7)}, from ${found.source}) ` +
          `in ${checkout.dir}: ${checkout.dependencies}\n`,
      );
      pair = await startUpgradePair(checkout.dir, { SVC_EDGE_OIDC_KEY_ROTATION_GRACE: '3s' });
      ({ previous: prev, current: cur } = pair);
      const level = await compatibilityLevel(pair.dbUrl);
      levelRaised = levelIsAbove(level, checkout.newestMigration);
      process.stderr.write(
        levelRaised
          ? `the current code raised the compatibility level to ${level}, past ${checkout.newestMigration} of ` +
              `release ${release.version}: only its refusal to start is tested, not the two together\n`
          : `compatibility level ${level ?? 'none'}, release ${release.version} knows up to ` +
              `${checkout.newestMigration}: the two run together (nothing to refuse)\n`,
      );
      const login = await prev.client.post(`${MGMT}/authenticate?method=password`, {
        body: { username: 'admin', password: ADMIN_PASSWORD },
      });
      expect(login.status).toBe(200);
      admin = { 'svc-session': login.body.data.token };
      adminId = login.body.data.identityId;
      await insertJanitorRows();
    }, 900_000);

    afterAll(async () => {
      await pair?.close();
      checkout?.remove();
      if (!release) return;
      const failures = phases.started - phases.finished + phases.failures;
      const what =
        refusal ??
        `${tally.logins} logins across processes and ${tally.apiLogins} API logins, ${tally.refreshes} refreshes, ` +
          `${tally.revocations} revocations, ${tally.identityChanges} identity changes, 1 key rotation, ` +
          `${tally.frontRequests} requests through the front around a restart (connections: ` +
          `${pair?.front.served[0]} to the previous release, ${pair?.front.served[1]} to the current)`;
      process.stdout.write(
        `previous release ${release.version} (${release.commit.slice(0, 7)}) + current: ${what}, ` +
          `${failures} failures (${Math.round((Date.now() - began) / 1000)} s)\n`,
      );
    }, 60_000);

    async function withDatabase<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
      const client = new pg.Client({ connectionString: pair.dbUrl });
      await client.connect();
      try {
        return await fn(client);
      } finally {
        await client.end();
      }
    }

    /** Ten expired and five live rows in each table the janitors of both releases clean. */
    function insertJanitorRows() {
      return withDatabase(async (db) => {
        for (const [prefix, expiresAt, count] of [
          [EXPIRED, "now() - interval '2 hours'", 10],
          [LIVE, "now() + interval '2 hours'", 5],
        ] as const) {
          await db.query(
            `INSERT INTO api_sessions (id, identity_id, kind, expires_at)
           SELECT $1 || i, $2, 'legacy', ${expiresAt} FROM generate_series(1, ${count}) AS i`,
            [prefix, adminId],
          );
          await db.query(
            `INSERT INTO revocations (kind, subject, expires_at)
           SELECT 'api_session', $1 || i, ${expiresAt} FROM generate_series(1, ${count}) AS i`,
            [prefix],
          );
          await db.query(
            `INSERT INTO oidc_payloads (model, id, payload, expires_at)
           SELECT 'Interaction', $1 || i, '{}', ${expiresAt} FROM generate_series(1, ${count}) AS i`,
            [prefix],
          );
        }
      });
    }

    test('the previous release refuses to start on a database past its compatibility level', async () => {
      if (!levelRaised) return;
      phases.started++;
      const level = (await compatibilityLevel(pair.dbUrl))!;
      await pair.stop(prev);
      const again = await pair.spawnAgain(prev);
      // It exits by itself; serving instead would be the failure, and ends the wait at once.
      const served = await waitFor(
        async () => {
          if (again.child.exitCode !== null) return 'exited';
          const ready = await prev.client.get('/health/ready').catch(() => undefined);
          return ready?.status === 200 && 'serving';
        },
        { what: 'the previous release to exit or serve', timeout: 120_000, interval: 250 },
      ).finally(() => again.child.kill('SIGTERM'));
      expect(served).toBe('exited');
      expect(again.child.exitCode).not.toBe(0);
      const lines = again.output().trim().split('\n');
      // One line that names the level, no stack trace.
      expect(lines.filter((line) => line.includes(level))).toHaveLength(1);
      expect(lines.filter((line) => /^\s+at /.test(line))).toEqual([]);
      // The current code serves on.
      expect((await cur.client.get(`${MGMT}/current-identity`, { headers: admin })).status).toBe(200);
      refusal = `the previous release refused to start at compatibility level ${level} (exit ${again.child.exitCode})`;
      phases.finished++;
    });

    phase('both processes answer for the one address: one issuer, wherever discovery lands', async () => {
      for (const side of [prev, cur]) {
        const doc = await side.client.get('/oidc/.well-known/openid-configuration');
        expect([doc.status, doc.body.issuer]).toEqual([200, pair.issuer]);
      }
    });

    phase('an identity created on one process is read, updated and deleted on the other', async () => {
      for (const [i, [a, b]] of [...orders(), ...orders(), ...orders()].entries()) {
        const name = `upgrade-identity-${i}`;
        const created = await a.client.post(`${MGMT}/identities`, {
          headers: admin,
          body: { name, isAdmin: false, roleAttributes: ['first'] },
        });
        expect(created.status).toBe(201);
        const id = created.body.data.id as string;
        const read = await b.client.get(`${MGMT}/identities/${id}`, { headers: admin });
        expect([read.status, read.body.data.name]).toEqual([200, name]);
        // Two updates of different fields at once, one on each process: neither is lost.
        const [renamed, tagged] = await Promise.all([
          b.client.patch(`${MGMT}/identities/${id}`, { headers: admin, body: { name: `${name}-renamed` } }),
          a.client.patch(`${MGMT}/identities/${id}`, {
            headers: admin,
            body: { roleAttributes: ['second'] },
          }),
        ]);
        expect([renamed.status, tagged.status]).toEqual([200, 200]);
        const viaFront = await pair.viaFront().get(`${MGMT}/identities/${id}`, { headers: admin });
        expect([viaFront.status, viaFront.body.data.name, viaFront.body.data.roleAttributes]).toEqual([
          200,
          `${name}-renamed`,
          ['second'],
        ]);
        tally.identityChanges += 3;
        if (i % 2 === 1) {
          expect((await b.client.delete(`${MGMT}/identities/${id}`, { headers: admin })).status).toBe(200);
          expect((await a.client.get(`${MGMT}/identities/${id}`, { headers: admin })).status).toBe(404);
          tally.identityChanges++;
        }
      }
      for (const [i, [a, b]] of orders().entries()) {
        users.push(await createPasswordUser(`upgrade-user-${i}`, admin, a.client, b.client));
        tally.identityChanges++;
      }
    });

    phase(
      'a login begun on one process finishes on the other, and refreshes on the one that did not issue',
      async () => {
        for (let round = 0; round < 3; round++) {
          for (const [i, [a, b]] of orders().entries()) {
            const user = users[i]!;
            const { config, tokens } = await loginAcross(pair.issuer, user, a, b);
            tally.logins++;
            expect(tokens.claims()).toMatchObject({ sub: user.id, iss: pair.issuer });
            // Issued by `a` (the code exchange went there): refreshed by `b`, and the refreshed
            // token used on both.
            const refreshed = await oc.refreshTokenGrant(via(config, b), tokens.refresh_token!);
            tally.refreshes++;
            for (const side of [a, b]) {
              expect(await whoAmI(side.client, { bearer: refreshed.access_token })).toEqual({
                status: 200,
                id: user.id,
              });
            }
            const info = await oc.fetchUserInfo(via(config, a), refreshed.access_token, user.id);
            expect(info.sub).toBe(user.id);
            const session = await apiLogin(a.client, user);
            tally.apiLogins++;
            expect(await whoAmI(b.client, { session: session.token })).toEqual({ status: 200, id: user.id });
          }
        }
        // openid-client through the front alone, each request on a connection of its own.
        const front: Hop = { client: pair.viaFront(), oidcFetch: pair.frontFetch };
        const { config, tokens } = await loginAcross(pair.issuer, users[0]!, front, front);
        await oc.refreshTokenGrant(via(config, front), tokens.refresh_token!);
        tally.logins++;
        tally.refreshes++;
      },
    );

    /** Polls until `side` refuses the credential; a refusal arrives within the change feed's delay. */
    const refusedBy = (
      side: UpgradeSide,
      credential: { bearer: string } | { session: string },
      what: string,
    ) =>
      waitFor(async () => (await whoAmI(side.client, credential)).status === 401, {
        what: `${side.name} to refuse ${what}`,
        timeout: 30_000,
        interval: 200,
      });

    phase('a revocation published by one process is applied by the other', async () => {
      for (const [i, [a, b]] of orders().entries()) {
        const user = users[i]!;
        // RFC 7009 on a refresh token: the other process refuses to refresh it.
        const first = await loginAcross(pair.issuer, user, a, b);
        await oc.tokenRevocation(via(first.config, a), first.tokens.refresh_token!);
        const refused = await oc.refreshTokenGrant(via(first.config, b), first.tokens.refresh_token!).then(
          () => 'refreshed',
          (err: { error?: string }) => err.error,
        );
        expect(refused).toBe('invalid_grant');
        // RFC 7009 on an access token ends its API session, on every process.
        const second = await loginAcross(pair.issuer, user, b, a);
        expect(await whoAmI(b.client, { bearer: second.tokens.access_token })).toMatchObject({ status: 200 });
        await oc.tokenRevocation(via(second.config, a), second.tokens.access_token, {
          token_type_hint: 'access_token',
        });
        await refusedBy(b, { bearer: second.tokens.access_token }, 'a revoked access token');
        // An API session ended by an admin on one process.
        const session = await apiLogin(b.client, user);
        expect(await whoAmI(a.client, { session: session.token })).toMatchObject({ status: 200 });
        const ended = await a.client.delete(`${MGMT}/api-sessions/${session.id}`, { headers: admin });
        expect(ended.status).toBe(200);
        await refusedBy(b, { session: session.token }, 'an ended API session');
        revoked.push({ bearer: second.tokens.access_token }, { session: session.token });
        tally.logins += 2;
        tally.apiLogins++;
        tally.revocations += 3;
      }
    });

    phase('after a key rotation on one process, tokens of both verify against the keys of both', async () => {
      const jwks = async (side: UpgradeSide) => (await side.client.get('/oidc/keys')).body as JSONWebKeySet;
      const before = await Promise.all(
        orders().map(([a, b], i) => loginAcross(pair.issuer, users[i]!, a, b)),
      );
      tally.logins += 2;
      const oldKid = decodeProtectedHeader(before[0]!.tokens.access_token).kid;
      const rotated = await prev.client.post(`${MGMT}/keys/rotate`, { headers: admin });
      expect(rotated.status).toBe(200);
      const newKid = rotated.body.data.kid as string;
      expect(newKid).not.toBe(oldKid);
      // After the grace period each process signs with the new key: refreshes on each until it does.
      const after: string[] = [];
      for (const [i, side] of [prev, cur].entries()) {
        const { config } = before[i]!;
        let refresh = before[i]!.tokens.refresh_token!;
        const fresh = await waitFor(
          async () => {
            const t = await oc.refreshTokenGrant(via(config, side), refresh);
            tally.refreshes++;
            refresh = t.refresh_token!;
            return decodeProtectedHeader(t.access_token).kid === newKid && t;
          },
          { what: `${side.name} to sign with the new key`, timeout: 60_000, interval: 500 },
        );
        after.push(fresh.access_token, fresh.id_token!);
      }
      const tokens = [...before.flatMap((b) => [b.tokens.access_token, b.tokens.id_token!]), ...after];
      for (const side of [prev, cur]) {
        const keys = createLocalJWKSet(await jwks(side));
        for (const token of tokens)
          await expect(jwtVerify(token, keys, { issuer: pair.issuer })).resolves.toBeTruthy();
        for (const token of [before[0]!.tokens.access_token, after[0]!]) {
          expect((await whoAmI(side.client, { bearer: token })).status).toBe(200);
        }
      }
    });

    phase(
      'the previous release, restarted mid-run on the migrated database, serves again; traffic through the front loses nothing',
      async () => {
        const user = users[1]!;
        const { config, tokens } = await loginAcross(pair.issuer, user, cur, prev);
        const session = await apiLogin(cur.client, user);
        tally.logins++;
        tally.apiLogins++;
        const load = startFrontLoad(pair, admin, {
          config,
          refreshToken: tokens.refresh_token!,
          session: session.token,
        });
        await load.answered(20);
        // Out of the balancer's rotation first (its health check failing), then stopped once idle.
        pair.front.setInRotation(0, false);
        await pair.front.drained(0);
        expect(await pair.stop(prev)).toBe(0);
        await load.answered(10);
        await pair.restart(prev);
        const servedBefore = pair.front.served[0]!;
        pair.front.setInRotation(0, true);
        await waitFor(() => pair.front.served[0]! >= servedBefore + 5, {
          what: 'the restarted previous release to serve through the front',
          timeout: 60_000,
        });
        await load.answered(10);
        const outcome = await load.stop();
        tally.frontRequests += outcome.requests;
        tally.refreshes += outcome.refreshes;
        tally.identityChanges += outcome.created.length;
        phases.failures += outcome.failures.length;
        expect(outcome.failures).toEqual([]);
        // Every identity the load was told was created is in the database.
        const stored = await withDatabase((db) =>
          db.query('SELECT count(*)::int AS n FROM identities WHERE id = ANY($1)', [outcome.created]),
        );
        expect(stored.rows[0].n).toBe(outcome.created.length);
        // What was revoked before the restart stays revoked on the restarted process; a login begun
        // on the current code finishes on it and refreshes there.
        for (const credential of revoked) {
          expect((await whoAmI(prev.client, credential)).status).toBe(401);
        }
        const again = await loginAcross(pair.issuer, user, cur, prev);
        const refreshed = await oc.refreshTokenGrant(via(again.config, prev), again.tokens.refresh_token!);
        expect(await whoAmI(prev.client, { bearer: refreshed.access_token })).toEqual({
          status: 200,
          id: user.id,
        });
        expect(await whoAmI(prev.client, { session: session.token })).toEqual({ status: 200, id: user.id });
        tally.logins++;
        tally.refreshes++;
      },
    );

    phase('the janitors of both processes remove expired rows and nothing live', async () => {
      const count = (db: pg.Client, table: string, column: string, prefix: string) =>
        db
          .query(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} LIKE $1`, [`${prefix}%`])
          .then((r) => r.rows[0].n as number);
      const counts = (prefix: string) =>
        withDatabase(async (db) => [
          await count(db, 'api_sessions', 'id', prefix),
          await count(db, 'revocations', 'subject', prefix),
          await count(db, 'oidc_payloads', 'id', prefix),
        ]);
      // A pass a minute on each process, one at a time: the rows are gone within two.
      await waitFor(async () => (await counts(EXPIRED)).every((n) => n === 0), {
        what: 'the janitors to remove the expired rows',
        timeout: 150_000,
        interval: 1000,
      });
      expect(await counts(LIVE)).toEqual([5, 5, 5]);
      for (const side of [prev, cur]) {
        expect((await side.client.get(`${MGMT}/current-identity`, { headers: admin })).status).toBe(200);
      }
    });
  },
);
