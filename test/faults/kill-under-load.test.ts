import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { describeWithOwnCluster, startPgCluster, type PgCluster } from '../helpers/pg-cluster.js';
import { freePort } from '../helpers/spawn-controller.js';
import { startAuthorization } from '../helpers/oidc-client.js';
import {
  adminSession,
  bearerStatus,
  killHard,
  login,
  passwordStep,
  redeem,
  refresh,
  SCALE,
  sleep,
  startInstance,
  type Instance,
  type Started,
  type Tokens,
} from './fault-fixtures.js';

const WORKERS = 4 * SCALE;
const PHASE_MS = 5_000 * SCALE;
/** Flows begun on the instance that is killed, finished on the survivor. */
const PENDING = 3 * SCALE;

/** What the load driver was told succeeded (2xx), and what it could not know. */
interface Ledger {
  created: Set<string>;
  deleted: Set<string>;
  /** Deletions sent to the killed instance and never answered: whether they happened is unknown. */
  undecided: Set<string>;
  /** The newest refresh token each chain was given; undefined once its outcome is unknown. */
  chains: (string | undefined)[];
  rotations: number;
  logins: number;
  bearerCalls: number;
  afterKill: number;
  /** Requests to the killed instance that got no answer (their outcome is unknown). */
  unanswered: number;
  /** Answers that should never happen: a 5xx from a live instance, an unexpected refusal. */
  failures: string[];
}

describeWithOwnCluster('kill -9 of one of two instances under load', () => {
  let cluster: PgCluster;
  let a: Instance;
  let b: Instance;
  let session: string;

  beforeAll(async () => {
    cluster = await startPgCluster();
    const frontPort = await freePort();
    a = await startInstance('a', { databaseUrl: cluster.url, frontPort });
    b = await startInstance('b', { databaseUrl: cluster.url, frontPort });
    session = await adminSession(a);
  }, 240_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await cluster?.destroy();
  }, 60_000);

  test(
    'the survivor serves on, finishes the dead one’s flows, and every acknowledged write is there',
    async () => {
      const ledger: Ledger = {
        created: new Set(),
        deleted: new Set(),
        undecided: new Set(),
        chains: [],
        rotations: 0,
        logins: 0,
        bearerCalls: 0,
        afterKill: 0,
        unanswered: 0,
        failures: [],
      };
      const instances = [a, b];
      const alive = () => instances.filter((i) => !i.dead);
      const pick = () => {
        const live = alive();
        return live[Math.floor(Math.random() * live.length)]!;
      };
      let stopping = false;
      let killed = false;

      /** Runs one request; an error from an instance that has been killed is an unknown outcome. */
      async function attempt<T>(via: Instance[], what: string, op: () => Promise<T>): Promise<T | undefined> {
        try {
          const result = await op();
          if (killed) ledger.afterKill++;
          return result;
        } catch (err) {
          if (via.some((i) => i.dead)) {
            ledger.unanswered++;
            return undefined;
          }
          ledger.failures.push(`${what} via ${via.map((i) => i.name).join('→')}: ${(err as Error).message}`);
          return undefined;
        }
      }

      async function worker(w: number): Promise<void> {
        const mine: string[] = [];
        let chain: number | undefined;
        let access: string | undefined;
        for (let n = 0; !stopping; n++) {
          const op = n % 5;
          if (op === 0 || chain === undefined || ledger.chains[chain] === undefined) {
            const steps: [Instance, Instance, Instance] = [pick(), pick(), pick()];
            const tokens = await attempt(steps, 'login', () => login(steps));
            if (tokens) {
              ledger.logins++;
              chain = ledger.chains.push(tokens.refresh) - 1;
              access = tokens.access;
            }
          } else if (op === 1) {
            const via = pick();
            const token = ledger.chains[chain]!;
            const tokens = await attempt([via], 'refresh', () => refresh(via, token));
            if (tokens) {
              ledger.rotations++;
              ledger.chains[chain] = tokens.refresh;
              access = tokens.access;
            } else ledger.chains[chain] = undefined; // consumed or not: unknown
          } else if (op === 2 && access) {
            const via = pick();
            const status = await attempt([via], 'bearer', () => bearerStatus(via, access!));
            if (status === 200) ledger.bearerCalls++;
            else if (status !== undefined) ledger.failures.push(`bearer call via ${via.name}: ${status}`);
          } else if (op === 3) {
            const via = pick();
            const name = `load-${w}-${n}`;
            const res = await attempt([via], 'create', () =>
              via.client.post('/edge/management/v1/identities', {
                headers: { 'svc-session': session },
                body: { name, type: 'Device', isAdmin: false, enrollment: { ott: true } },
              }),
            );
            if (res?.status === 201) {
              ledger.created.add(res.body.data.id);
              mine.push(res.body.data.id);
            } else if (res) ledger.failures.push(`create via ${via.name}: ${res.status} ${res.text}`);
          } else if (op === 4 && mine.length > 2) {
            const via = pick();
            const id = mine.shift()!;
            const res = await attempt([via], 'delete', () =>
              via.client.delete(`/edge/management/v1/identities/${id}`, {
                headers: { 'svc-session': session },
              }),
            );
            if (res?.status === 200) ledger.deleted.add(id);
            else if (!res) ledger.undecided.add(id);
            else ledger.failures.push(`delete via ${via.name}: ${res.status} ${res.text}`);
          }
        }
      }

      const workers = Array.from({ length: WORKERS }, (_, w) => worker(w));
      await sleep(PHASE_MS);

      // Flows begun on A just before it dies: an authorization request, a code, a refresh chain.
      const pendingRequests: Started[] = [];
      const pendingCodes: { started: Started; callback: URL }[] = [];
      const pendingChains: Tokens[] = [];
      for (let i = 0; i < PENDING; i++) {
        pendingRequests.push(await startAuthorization(a.client, { method: 'password' }));
        const started = await startAuthorization(a.client, { method: 'password' });
        pendingCodes.push({ started, callback: await passwordStep(a, started) });
        pendingChains.push(await login([a, a, a]));
      }
      const beforeKill = { ...ledger, created: ledger.created.size };
      await killHard(a);
      killed = true;
      const killedAt = Date.now();
      await sleep(PHASE_MS);
      stopping = true;
      await Promise.all(workers);

      // The dead instance's flows, finished on the survivor.
      let pendingFinished = 0;
      for (const started of pendingRequests) {
        const tokens = await redeem(b, started, await passwordStep(b, started));
        if ((await bearerStatus(b, tokens.access)) === 200) pendingFinished++;
      }
      for (const { started, callback } of pendingCodes) {
        if ((await bearerStatus(b, (await redeem(b, started, callback)).access)) === 200) pendingFinished++;
      }
      for (const tokens of pendingChains) {
        if ((await bearerStatus(b, (await refresh(b, tokens.refresh)).access)) === 200) pendingFinished++;
      }

      // Every acknowledged write, read back from the database.
      const db = await cluster.connect();
      const live = [...ledger.created].filter((id) => !ledger.deleted.has(id) && !ledger.undecided.has(id));
      const present = await db.query<{ id: string; enrollments: string }>(
        `SELECT i.id, (SELECT count(*) FROM enrollments e WHERE e.identity_id = i.id) AS enrollments
         FROM identities i WHERE i.id = ANY($1)`,
        [live],
      );
      const gone = await db.query(`SELECT id FROM identities WHERE id = ANY($1)`, [[...ledger.deleted]]);
      // Half-written: any identity of the load without the enrollment created in its transaction.
      const halfWritten = await db.query(
        `SELECT id FROM identities i WHERE i.name LIKE 'load-%'
          AND NOT EXISTS (SELECT 1 FROM enrollments e WHERE e.identity_id = i.id)`,
      );
      await db.end();
      // Every chain's newest acknowledged refresh token must redeem: its successor was stored.
      let chainsVerified = 0;
      const heads = ledger.chains.filter((t): t is string => t !== undefined);
      for (const head of heads) {
        try {
          await refresh(b, head);
          chainsVerified++;
        } catch (err) {
          ledger.failures.push(`acknowledged refresh token did not redeem: ${(err as Error).message}`);
        }
      }

      const withEnrollment = present.rows.filter((r) => Number(r.enrollments) === 1).length;
      const acknowledged = live.length + ledger.deleted.size + heads.length;
      const verified = withEnrollment + (ledger.deleted.size - gone.rowCount!) + chainsVerified;
      process.stdout.write(
        `kill -9 under load (${WORKERS} workers, ${PHASE_MS / 1000} s before and after the kill):\n` +
          `  logins ${ledger.logins}, refresh rotations ${ledger.rotations}, bearer calls ${ledger.bearerCalls}, ` +
          `identities created ${ledger.created.size} / deleted ${ledger.deleted.size}\n` +
          `  before the kill: ${beforeKill.logins} logins, ${beforeKill.created} creates; ` +
          `answered by the survivor after it: ${ledger.afterKill}; unanswered by the killed one: ${ledger.unanswered}\n` +
          `  flows begun on the killed instance finished on the survivor: ${pendingFinished}/${3 * PENDING}\n` +
          `  writes acknowledged ${acknowledged}, verified ${verified}, lost ${acknowledged - verified}` +
          ` (identities ${live.length}, deletions ${ledger.deleted.size}, refresh-chain heads ${heads.length});` +
          ` half-written ${halfWritten.rowCount}; deletions left unanswered by the killed one (outcome unknown,` +
          ` not counted) ${ledger.undecided.size}; survivor pid alive ${b.process.child.exitCode === null}` +
          ` ${Date.now() - killedAt} ms after the kill\n`,
      );

      // The instances' own account of any failure, next to the failure itself.
      if (ledger.failures.length > 0)
        for (const instance of [a, b])
          process.stdout.write(
            instance.process
              .output()
              .split('\n')
              .filter((l) => /"level":(50|60)/.test(l))
              .join('\n') + '\n',
          );
      expect(ledger.failures).toEqual([]);
      expect(ledger.afterKill).toBeGreaterThan(0);
      expect(pendingFinished).toBe(3 * PENDING);
      expect(acknowledged - verified).toBe(0);
      expect(halfWritten.rowCount).toBe(0);
      expect(b.process.child.exitCode).toBeNull();
    },
    180_000 + 2 * PHASE_MS * 3,
  );
});
