import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from '../db/create-database.js';
import {
  revocationsRepository,
  type Revocation,
  type RevocationKind,
} from '../repositories/revocations-repository.js';

export const REVOCATION_CHANNEL = 'svc_revocations';

// Ids are taken at insert but become visible at commit, so a smaller id can appear after a larger
// one: every gap below the highest id seen is asked for again until it fills or this long passes
// (a rolled-back insert leaves a gap for good).
const GAP_MS = 10 * 60_000;
// A jump this large is not an in-flight transaction (sequence gaps of rollbacks, a restore).
const MAX_GAP = 1000;
const PAGE = 1000;
const START_WATCH = 50;

interface Entry {
  /** Tokens of the identity with a generation below this are refused; Infinity = deleted. */
  minGeneration: number;
  expiresAt: number;
}

export interface RevocationStateDeps {
  database: Database;
  logger: Logger;
  pollMs?: number;
  now?: () => number;
}

/**
 * The revocations every process must know without a database read per request
 * (docs/adr/0006-revocation-listen-notify-catch-up.md): API sessions ended and identities whose tokens were
 * invalidated. Kept current by PostgreSQL LISTEN/NOTIFY plus a catch-up read every `pollMs` (1 s), so a
 * lost notification or a dropped listener connection delays a revocation by at most that long.
 */
export function createRevocationState({
  database,
  logger,
  pollMs = 1000,
  now = Date.now,
}: RevocationStateDeps) {
  const sessions = new Map<string, number>();
  const identities = new Map<string, Entry>();
  const gaps = new Map<number, number>();
  const identityListeners: ((identityId: string, kind: RevocationKind) => void)[] = [];
  const sessionListeners: ((sessionId: string) => void)[] = [];
  let maxId = 0;
  let timer: NodeJS.Timeout | undefined;
  let listener: pg.Client | undefined;
  let stopped = false;
  let refreshing: Promise<void> | undefined;
  let again: Promise<void> | undefined;

  const apply = (r: Revocation) => {
    gaps.delete(r.id);
    if (r.id > maxId) {
      if (r.id - maxId <= MAX_GAP) for (let id = maxId + 1; id < r.id; id++) gaps.set(id, now());
      maxId = r.id;
    }
    const expiresAt = r.expiresAt.getTime();
    if (expiresAt <= now()) return;
    if (r.kind === 'api_session') {
      sessions.set(r.subject, Math.max(sessions.get(r.subject) ?? 0, expiresAt));
      for (const listener of sessionListeners) listener(r.subject);
    }
    if (r.kind === 'identity' || r.kind === 'identity_facts') {
      for (const listener of identityListeners) listener(r.subject, r.kind);
    }
    if (r.kind === 'identity') {
      const minGeneration = r.generation === null ? Infinity : r.generation;
      const current = identities.get(r.subject);
      identities.set(r.subject, {
        minGeneration: Math.max(current?.minGeneration ?? 0, minGeneration),
        expiresAt: Math.max(current?.expiresAt ?? 0, expiresAt),
      });
    }
  };

  const prune = () => {
    const t = now();
    for (const [k, exp] of sessions) if (exp <= t) sessions.delete(k);
    for (const [k, e] of identities) if (e.expiresAt <= t) identities.delete(k);
    for (const [id, at] of gaps) if (at < t - GAP_MS) gaps.delete(id);
  };

  async function readNow(): Promise<void> {
    for (;;) {
      const rows = await revocationsRepository.listAfterOrIn(database.knex, maxId, [...gaps.keys()], PAGE);
      rows.forEach(apply);
      if (rows.length < PAGE) break;
    }
    prune();
  }

  /**
   * At start: everything in force and the high-water mark. The few ids just below it that are
   * not there yet may belong to transactions still in flight: they are watched like gaps.
   */
  async function load(): Promise<void> {
    const top = await revocationsRepository.maxId(database.knex);
    const live = await revocationsRepository.listLive(database.knex, new Date(now()));
    live.forEach(apply);
    gaps.clear();
    const present = new Set(live.map((r) => r.id));
    for (let id = Math.max(1, top - START_WATCH + 1); id <= top; id++)
      if (!present.has(id)) gaps.set(id, now());
    maxId = Math.max(maxId, top);
  }

  /** Single-flight catch-up read. */
  function refresh(): Promise<void> {
    // A read already under way may have started before the caller's commit: read once more after it.
    if (refreshing) {
      again ??= refreshing
        .catch(() => undefined)
        .then(() => {
          again = undefined;
          return refresh();
        });
      return again;
    }
    refreshing = readNow().finally(() => (refreshing = undefined));
    return refreshing;
  }

  async function listen(): Promise<void> {
    if (database.target.kind !== 'pg' || stopped) return;
    const client = new pg.Client({ connectionString: database.target.connectionString });
    client.on('notification', () => void refresh().catch(() => undefined));
    client.on('error', (err) => logger.warn({ err: err.message }, 'revocation listener lost; reconnecting'));
    client.on('end', () => {
      if (listener === client) listener = undefined;
      if (!stopped) setTimeout(() => void listen().catch(() => undefined), pollMs).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${REVOCATION_CHANNEL}`);
    listener = client;
    await refresh(); // whatever happened while we were not listening
  }

  return {
    isSessionRevoked: (sessionId: string) => (sessions.get(sessionId) ?? 0) > now(),
    isIdentityTokenRevoked: (identityId: string, generation: number) => {
      const e = identities.get(identityId);
      return e !== undefined && e.expiresAt > now() && generation < e.minGeneration;
    },
    refresh,

    /**
     * Called for every identity event applied, a revocation or a change of its facts (caches of
     * identity facts drop their entry).
     */
    onIdentityRevoked(listener: (identityId: string, kind: RevocationKind) => void): void {
      identityListeners.push(listener);
    },

    /** Called for every API session ended (logout, end of its grant): caches of sessions drop it. */
    onSessionRevoked(listener: (sessionId: string) => void): void {
      sessionListeners.push(listener);
    },

    /** The backend pid of the LISTEN connection (tests cut it to prove nothing is lost). */
    listenerPid: () => (listener as unknown as { processID?: number } | undefined)?.processID,

    async start(): Promise<void> {
      await load();
      await listen().catch((err) => logger.warn({ err: err.message }, 'revocation listener failed to start'));
      timer = setInterval(
        () => void refresh().catch((err) => logger.warn({ err: err.message }, 'revocation catch-up failed')),
        pollMs,
      );
      timer.unref();
    },

    async stop(): Promise<void> {
      stopped = true;
      clearInterval(timer);
      await refreshing?.catch(() => undefined);
      await listener?.end().catch(() => undefined);
    },
  };
}

export type RevocationState = ReturnType<typeof createRevocationState>;
